// Chapter 5, exercise 5.4: a group returns results as they finish, so each child says
// which position its result belongs to.
import Foundation

func thumbnail(of url: URL) async throws -> Data {
  try await Task.sleep(for: .milliseconds(10))
  return Data(url.lastPathComponent.utf8)
}

func thumbnails(of urls: [URL]) async throws -> [Data] {
  try await withThrowingTaskGroup(of: (Int, Data).self) { group in
    // listing: tag
    for (position, url) in urls.enumerated() {
      group.addTask { (position, try await thumbnail(of: url)) }
    }
    // listing: end
    var found = [Data?](repeating: nil, count: urls.count)
    for try await (position, data) in group { found[position] = data }
    return found.map { $0! }
  }
}
