/// Names the loss a bounded stream buffer leaves behind, so that a test can blame the
/// buffering policy when that is what threw elements away, instead of a cause the answer
/// does not have.
///
/// A stream made with `.bufferingNewest(n)` keeps only the newest elements while nobody
/// reads, so what comes out ends with the last element sent; `.bufferingOldest(n)` keeps
/// the first ones and drops the rest. Any other loss (gaps in the middle, reordering) is
/// not a buffer's and gets `nil`.
///
/// - Returns: A sentence for the test's message, and whether only a buffer explains the loss
///   (a kept prefix is also what an end that overtakes the last elements leaves), or `nil`
///   when `received` is not what a bounded buffer would have kept of `sent`.
public func boundedBufferLoss<Element: Equatable>(
  sent: [Element], received: [Element], of noun: String
) -> (sentence: String, onlyCause: Bool)? {
  guard !received.isEmpty, received.count < sent.count else { return nil }
  let keep = "keep every one until it is read (the default policy, .unbounded)"
  if sent.suffix(received.count).elementsEqual(received) {
    let sentence =
      "only the newest \(received.count) of \(sent.count) \(noun) came out: the rest "
      + "were thrown away while nobody read them, which is what a stream made with "
      + ".bufferingNewest does; \(keep)"
    return (sentence, true)
  }
  if sent.prefix(received.count).elementsEqual(received) {
    let sentence =
      "only the first \(received.count) of \(sent.count) \(noun) came out: a stream "
      + "made with .bufferingOldest throws away everything that comes while the first ones "
      + "wait unread (\(keep)); or else the stream was finished before the rest were yielded"
    return (sentence, false)
  }
  return nil
}
