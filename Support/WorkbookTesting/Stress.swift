import Foundation

/// True when the tests run in their long form: `workbook verify` and `workbook mistakes`
/// (so `make verify`, `make mistakes` and `make test`) set `WORKBOOK_LONG_TESTS=1`. A
/// learner's `make check` runs the short form, unless they set the variable themselves
/// (`WORKBOOK_LONG_TESTS=1 make check EXERCISE=3.2`).
public let longTests = ProcessInfo.processInfo.environment["WORKBOOK_LONG_TESTS"] == "1"

/// How much a stress test does: `grading` when a learner's check runs it, so that saving a
/// file gets its verdict within a couple of seconds; `verify` in the long form, which the
/// mistakes catalogue is checked with, so that a race that shows only now and then is
/// caught every time there.
///
/// Use it for the number of rounds, or the time a time-boxed stress test keeps going, of a
/// test whose point is volume; never for a deadline (`withDeadline` keeps its own limit).
/// Say in the test what the short form still catches.
public func stressAmount<Amount>(grading: Amount, verify: Amount) -> Amount {
  longTests ? verify : grading
}
