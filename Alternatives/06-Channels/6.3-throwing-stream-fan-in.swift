// The same pipeline, with an AsyncThrowingStream between the workers and the consumer: the
// workers' stage hands its error on through the stream, so the consumer's loop rethrows it.

func runPipeline<Source: AsyncSequence & Sendable, Output: Sendable>(
  source: Source,
  workers: Int,
  transform: @escaping @Sendable (Source.Element) async throws -> Output,
  consume: @escaping @Sendable (Output) async throws -> Void
) async throws where Source.Element: Sendable {
  precondition(workers > 0, "a pipeline needs at least one worker")
  let (results, resultSink) = AsyncThrowingStream.makeStream(of: Output.self)

  try await withThrowingTaskGroup(of: Void.self) { stages in
    stages.addTask {
      do {
        try await withThrowingTaskGroup(of: Output.self) { pool in
          var iterator = source.makeAsyncIterator()
          // Start up to `workers` transforms, then one more each time one ends.
          var running = 0
          while running < workers, let input = try await iterator.next() {
            pool.addTask { try await transform(input) }
            running += 1
          }
          while let output = try await pool.next() {
            resultSink.yield(output)
            if let input = try await iterator.next() {
              pool.addTask { try await transform(input) }
            }
          }
        }
        resultSink.finish()
      } catch {
        resultSink.finish(throwing: error)
      }
    }

    for try await output in results {
      try await consume(output)
    }
    try Task.checkCancellation()
  }
}
