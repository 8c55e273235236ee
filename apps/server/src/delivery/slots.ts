// The dispatcher's slot accounting, and nothing else: which claimed rows wait, which are being
// sent, which wait for their outcome to be recorded, and how many rows a claim may take of each
// endpoint. Synchronous and without I/O; the dispatcher (dispatcher.ts) decides when to claim and
// what a started row goes through.
//
// A row is held from its claim until its outcome is recorded: waiting (for a slot) → sending (its
// attempt on the wire) → recording (its outcome not yet durably written). Rows are claimed ahead,
// up to `ahead` × `perEndpoint` of an endpoint, so a freed slot starts the next attempt at once
// instead of waiting for a claim's round trip.
//
// A slow receiver keeps its rows held for as long as its attempts take. Counted like the others,
// an endpoint answering after 14 s held 8 slots and 16 rows waiting behind them, a fifth of what
// the rest could claim (bench/NOTES.md, "A slow receiver's lane"). An attempt the dispatcher
// judges slow (`slow`) moves its endpoint to the slow lane: that endpoint's rows on the wire and
// waiting count against `slowLane` rows of their own instead of the shared budget, and its claims
// no longer take rows ahead of its slots. Rows beyond a full lane count as before, so what is held
// stays bounded.

export interface SlotLimits {
  /** attempts on the wire at once, in all */
  concurrency: number;
  /** attempts on the wire at once, per endpoint; also the most one claim takes of an endpoint */
  perEndpoint: number;
  /** rows an endpoint may have waiting and sending, in multiples of `perEndpoint` */
  ahead: number;
  /** the most rows one claim takes */
  batchSize: number;
  /**
   * Outcomes not yet recorded beyond which claiming holds back (backpressure): while the database
   * is slow to record, what is held stays within `concurrency + batchSize + maxUnrecorded`.
   */
  maxUnrecorded: number;
  /** held rows of slow receivers (their attempts on the wire, and their rows waiting) counted apart from the rest */
  slowLane: number;
}

export type SlotState = "waiting" | "sending" | "recording";

/** A held row as the slots know it. */
export interface SlotRow {
  id: string;
  endpointId: string;
}

export interface SlotStats {
  /** rows held: waiting, sending and recording, plus the rows claims on the wire may still add */
  held: number;
  waiting: number;
  sending: number;
  /** attempts over whose outcome is not yet recorded */
  unrecorded: number;
  /** held rows of slow receivers counted in the slow lane rather than the shared budget (at most `slowLane`) */
  slow: number;
}

/** What a claim about to go out may take: `limit` rows, at most `room` of each endpoint named. */
export interface Reservation {
  limit: number;
  /** endpoints this dispatcher knows, with the rows the claim may still take of each (0: skip it) */
  room: ReadonlyMap<string, number>;
  /** The claim returned: its room is no longer reserved. */
  release(): void;
}

export interface Slots<R extends SlotRow> {
  /** A claimed row waits for a slot, behind its endpoint's earlier rows. */
  add(row: R): void;
  /** The waiting rows that have a slot now, in endpoint order; each now counts as sending. */
  startable(): R[];
  /** The rows on the wire not yet judged slow, the longest-running first. */
  sendingOldestFirst(): IterableIterator<R>;
  /** This row's attempt has run long: its endpoint is a slow receiver while any of its attempts is. */
  slow(row: SlotRow): void;
  /** Slow receivers' held rows beyond the lane: they count against the shared slots. */
  beyondSlowLane(): number;
  /** The row's attempt is over (or was never made): its slot is free; it stays held until `done`. */
  attemptOver(row: SlotRow): void;
  /** The row's outcome is recorded (or given up on): it is no longer held. */
  done(row: SlotRow): void;
  /** Takes the waiting rows that match out of the slots (no longer held); all waiting rows by default. */
  takeWaiting(match?: (row: R) => boolean): R[];
  /** Takes out the waiting rows of one endpoint. */
  takeWaitingOf(endpointId: string): R[];
  /** Rows a new claim may take now (0: none). */
  freeRows(): number;
  /** Reserves room for a claim of `limit` rows until it returns. */
  reserve(limit: number): Reservation;
  /** The held row of this delivery, if any. */
  get(id: string): R | undefined;
  /** Where a held row is: waiting for a slot, being sent, or waiting for its outcome to be recorded. */
  stateOf(id: string): SlotState | undefined;
  /** Every held row (waiting, sending, recording). */
  held(): R[];
  /** Whether any row is held. */
  readonly size: number;
  stats(): SlotStats;
}

export function createSlots<R extends SlotRow>(limits: SlotLimits): Slots<R> {
  const { concurrency, perEndpoint, ahead, batchSize, maxUnrecorded, slowLane } = limits;
  const perEndpointCap = ahead * perEndpoint;
  const rows = new Map<string, { row: R; state: SlotState }>(); // delivery id → the held row
  const waiting = new Map<string, R[]>(); // endpoint → its rows waiting for a slot, in claim order
  const busy = new Map<string, number>(); // endpoint → its rows sending
  const reserved = new Map<string, number>(); // endpoint → rows the claims on the wire may still add
  const onWire = new Map<string, R>(); // delivery id → a row sending and not yet judged slow, in start order
  const slowOf = new Map<string, number>(); // endpoint → its attempts judged slow and still on the wire
  const slowIds = new Set<string>(); // rows sending whose attempt was judged slow
  let waitingCount = 0;
  let sending = 0;
  let recording = 0;
  let reservedRows = 0;

  const bump = (map: Map<string, number>, key: string, by: number) => {
    const n = (map.get(key) ?? 0) + by;
    if (n > 0) map.set(key, n);
    else map.delete(key);
  };

  function forgetWaiting(taken: readonly R[]): void {
    for (const r of taken) rows.delete(r.id);
    waitingCount -= taken.length;
  }

  function takeWaiting(match: (row: R) => boolean = () => true): R[] {
    const taken: R[] = [];
    for (const [endpointId, list] of waiting) {
      const out = list.filter(match);
      if (!out.length) continue;
      const keep = list.filter((r) => !match(r));
      if (keep.length) waiting.set(endpointId, keep);
      else waiting.delete(endpointId);
      forgetWaiting(out);
      taken.push(...out);
    }
    return taken;
  }

  function attemptOver(row: SlotRow): void {
    const held = rows.get(row.id);
    if (held?.state !== "sending") return;
    held.state = "recording";
    sending--;
    recording++;
    bump(busy, row.endpointId, -1);
    onWire.delete(row.id);
    if (slowIds.delete(row.id)) bump(slowOf, row.endpointId, -1);
  }

  /** Held rows of slow receivers: attempts judged slow, and their endpoints' waiting rows. */
  function ofSlowReceivers(): number {
    if (!slowIds.size) return 0;
    let n = slowIds.size;
    for (const ep of slowOf.keys()) n += waiting.get(ep)?.length ?? 0;
    return n;
  }
  const inSlowLane = () => Math.min(slowLane, ofSlowReceivers());

  return {
    add(row) {
      if (rows.has(row.id)) throw new Error(`delivery ${row.id} is already held`);
      rows.set(row.id, { row, state: "waiting" });
      const list = waiting.get(row.endpointId);
      if (list) list.push(row);
      else waiting.set(row.endpointId, [row]);
      waitingCount++;
    },

    startable() {
      const started: R[] = [];
      // attempts judged slow leave the shared slots for their lane, as far as it goes
      let shared = sending - Math.min(slowLane, slowIds.size);
      for (const [endpointId, list] of waiting) {
        while (list.length && shared < concurrency && (busy.get(endpointId) ?? 0) < perEndpoint) {
          const row = list.shift()!;
          rows.get(row.id)!.state = "sending";
          waitingCount--;
          sending++;
          shared++;
          bump(busy, endpointId, 1);
          onWire.set(row.id, row);
          started.push(row);
        }
        if (!list.length) waiting.delete(endpointId);
        if (shared >= concurrency) break;
      }
      return started;
    },

    sendingOldestFirst: () => onWire.values(),

    slow(row) {
      if (!onWire.delete(row.id)) return;
      slowIds.add(row.id);
      bump(slowOf, row.endpointId, 1);
    },

    beyondSlowLane: () => Math.max(0, ofSlowReceivers() - slowLane),

    attemptOver,

    done(row) {
      const held = rows.get(row.id);
      if (!held) return;
      if (held.state === "waiting") return void takeWaiting((r) => r.id === row.id);
      if (held.state === "sending") attemptOver(row);
      recording--;
      rows.delete(row.id);
    },

    takeWaiting,

    takeWaitingOf(endpointId) {
      const list = waiting.get(endpointId) ?? [];
      waiting.delete(endpointId);
      forgetWaiting(list);
      return list;
    },

    freeRows() {
      // Outcomes the database has not yet taken beyond `maxUnrecorded` count as held rows: a
      // stalled recorder stops the claims instead of growing memory.
      const backlog = Math.max(0, recording - maxUnrecorded);
      return Math.max(0, Math.min(concurrency + batchSize - sending - waitingCount + inSlowLane() - reservedRows - backlog, batchSize));
    },

    reserve(limit) {
      // Each claim takes at most `perEndpoint` of an endpoint, within the cap of what it already
      // has waiting, sending, or reserved by the claims on the wire.
      const room = new Map<string, number>();
      for (const ep of new Set([...waiting.keys(), ...busy.keys(), ...reserved.keys()])) {
        const taken = (waiting.get(ep)?.length ?? 0) + (busy.get(ep) ?? 0) + (reserved.get(ep) ?? 0);
        // a slow receiver's next rows could only wait behind its attempts: none is claimed ahead
        const cap = slowOf.has(ep) ? perEndpoint : perEndpointCap;
        room.set(ep, Math.max(0, Math.min(perEndpoint, cap - taken)));
      }
      for (const [ep, n] of room) bump(reserved, ep, n);
      reservedRows += limit;
      let released = false;
      return {
        limit,
        room,
        release() {
          if (released) return;
          released = true;
          for (const [ep, n] of room) bump(reserved, ep, -n);
          reservedRows -= limit;
        },
      };
    },

    get: (id) => rows.get(id)?.row,
    stateOf: (id) => rows.get(id)?.state,
    held: () => [...rows.values()].map((h) => h.row),
    get size() {
      return rows.size;
    },
    stats: () => ({ held: rows.size + reservedRows, waiting: waitingCount, sending, unrecorded: recording, slow: inSlowLane() }),
  };
}
