// Chapter 4, exercise 4.5: what yield says when the buffer is full.
func yieldDemo() -> [String] {
  var said: [String] = []
  // listing: yield
  let (numbers, continuation) = AsyncStream.makeStream(
    of: Int.self, bufferingPolicy: .bufferingNewest(2))
  for number in 1...3 {
    switch continuation.yield(number) {
    case .enqueued(let remaining): said.append("kept \(number), room for \(remaining)")
    case .dropped(let evicted): said.append("kept \(number), threw \(evicted) away")
    case .terminated: said.append("nobody listens any more")
    @unknown default: said.append("a result this code does not know")
    }
  }
  // said: "kept 1, room for 1", "kept 2, room for 0", "kept 3, threw 1 away"
  // listing: end
  _ = numbers
  return said
}
