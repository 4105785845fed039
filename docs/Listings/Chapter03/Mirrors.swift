// Chapter 3, exercise 3.5: race two children in a task group, keep the first answer and
// cancel the other.
import Foundation

func fetch(from url: URL) async throws -> Data {
  try await Task.sleep(for: .milliseconds(url.path.count * 10))
  return Data(url.absoluteString.utf8)
}

func fasterCopy(primary: URL, mirror: URL) async throws -> Data {
  // listing: race
  try await withThrowingTaskGroup(of: Data.self) { group in
    group.addTask { try await fetch(from: primary) }
    group.addTask { try await fetch(from: mirror) }
    defer { group.cancelAll() }
    return try await group.next()!
  }
  // listing: end
}
