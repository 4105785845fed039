// Chapter 8, exercise 8.5: two loops in one group; each child returns how it ended.
enum ClipperEnding: Sendable {
  case serverGone
  case inputEnded
}

func firstEnding() async -> ClipperEnding {
  // listing: group
  let ending = await withTaskGroup(of: ClipperEnding.self) { group in
    group.addTask { /* for try await line in incoming … */ return .serverGone }
    group.addTask { /* for await line in inputLines(from: input) … */ return .inputEnded }
    // listing: elide …
    let first = await group.next()!
    group.cancelAll()
    return first
    // listing: show
  }
  // listing: end
  return ending
}
