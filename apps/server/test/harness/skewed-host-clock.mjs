// Preloaded into a test's child process (`node --import …`): the host's wall clock runs
// ARS_TEST_HOST_CLOCK_SKEW_MS off (+ ahead, - behind), as on a host whose clock is wrong. Date and
// Date.now() are what a wrong host clock changes; the monotonic clock (performance.now) is not.
const skew = Number(process.env.ARS_TEST_HOST_CLOCK_SKEW_MS ?? 0);
const HostDate = globalThis.Date;

class SkewedDate extends HostDate {
  constructor(...args) {
    if (args.length === 0) super(HostDate.now() + skew);
    else super(...args);
  }

  static now() {
    return HostDate.now() + skew;
  }
}

globalThis.Date = SkewedDate;
