// Which V8 flags the operator gave Node: a flag the service would set at start (heap sizing,
// WebAssembly tiering) yields to the operator's own.

/** Whether `flag` (without its dashes, in either spelling) is on Node's command line or in NODE_OPTIONS. */
export function givenByOperator(flag: string): boolean {
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)];
  const spellings = [flag, flag.replace(/-/g, "_")];
  return given.some((arg) => spellings.some((s) => arg === `--${s}` || arg.startsWith(`--${s}=`)));
}
