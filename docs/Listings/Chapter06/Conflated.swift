// Chapter 6, exercise 6.4: AsyncStream with bufferingNewest(1) is a conflated channel
// for one consumer.
func latestProgress() async -> [Double] {
  var shown: [Double] = []
  // listing: conflated
  let (progress, report) = AsyncStream.makeStream(
    of: Double.self, bufferingPolicy: .bufferingNewest(1))
  report.yield(0.25)
  report.yield(0.5)  // replaces 0.25, which nobody had received yet
  report.finish()
  for await fraction in progress { shown.append(fraction) }  // shown: [0.5]
  // listing: end
  return shown
}
