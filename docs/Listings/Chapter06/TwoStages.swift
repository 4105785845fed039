// Chapter 6, exercise 6.3: a two-stage pipeline owned by a task group.
struct Photo: Sendable { var name: String }
struct Thumbnail: Sendable { var name: String }

func render(_ photo: Photo) async throws -> Thumbnail {
  try await Task.sleep(for: .milliseconds(5))
  return Thumbnail(name: "small-" + photo.name)
}

func save(_ thumbnail: Thumbnail) async throws {
  try await Task.sleep(for: .milliseconds(1))
}

func makeThumbnails(of photos: AsyncThrowingStream<Photo, any Error>) async throws {
  // listing: pipeline
  let (results, sink) = AsyncStream.makeStream(of: Thumbnail.self)
  try await withThrowingTaskGroup(of: Void.self) { stages in
    stages.addTask {
      defer { sink.finish() }  // however this stage ends, the next one ends too
      for try await photo in photos { sink.yield(try await render(photo)) }
    }
    for await thumbnail in results { try await save(thumbnail) }
    try await stages.waitForAll()  // rethrows the stage's error, if any
  }
  // listing: end
}
