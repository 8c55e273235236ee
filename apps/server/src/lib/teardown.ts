/**
 * What a start-up has opened so far, given back last-opened first: a start that fails half-way
 * (a taken port, a failed migration) releases every connection, pool and lock it already took,
 * and a normal shutdown closes the same things in the same order.
 */
export interface Teardown {
  /** Registers how to release something just opened; released before everything registered earlier. */
  add(release: () => Promise<unknown> | unknown): void;
  /**
   * Releases everything, last added first. A failing step does not stop the others; the first
   * failure is thrown once all have run. Safe to call again: each step runs once.
   */
  run(): Promise<void>;
}

export function createTeardown(): Teardown {
  const steps: Array<() => Promise<unknown> | unknown> = [];
  return {
    add(release) {
      steps.push(release);
    },
    async run() {
      const failures: unknown[] = [];
      for (let step = steps.pop(); step; step = steps.pop()) {
        try {
          await step();
        } catch (err) {
          failures.push(err);
        }
      }
      if (failures.length) throw failures[0];
    },
  };
}
