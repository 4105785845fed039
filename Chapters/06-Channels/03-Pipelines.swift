// The coroutine way: three stages, each a coroutine or a few, and CoChannels between them.
//
//     let photos = CoChannel<Photo>(capacity: 8)
//     let thumbnails = CoChannel<Thumbnail>(capacity: 8)
//     queue.startCoroutine { for photo in library { try photos.awaitSend(photo) }; photos.close() }
//     var running = 4
//     for _ in 0..<4 {
//       queue.startCoroutine {
//         for photo in photos { try thumbnails.awaitSend(render(photo)) }
//         running -= 1                      // a data race
//         if running == 0 { thumbnails.close() }
//       }
//     }
//     queue.startCoroutine { for thumbnail in thumbnails { save(thumbnail) } }
//
// Nothing owns these coroutines. If `save` fails, the workers block forever on a full
// channel; if the screen goes away, everything keeps running.
//
// Here the stages are tasks in one task group, so none outlives the pipeline, and the
// channels between them are `AsyncStream`s, the standard library's channel: any number of
// tasks may yield into one, and one task reads it.

/// Runs `source` through a pipeline of three stages and returns when the last result has
/// been consumed:
///
/// 1. the source, read once: whoever feeds it ends it (an `AsyncStream` is finished) to
///    close the pipeline, and an error it throws fails the pipeline;
/// 2. the workers: `transform` runs on up to `workers` elements at once (fan-out), and the
///    results are gathered, in the order they are ready, into one stream (fan-in);
/// 3. the consumer: `consume` is called with one result at a time.
///
/// If `transform` or `consume` throws, the pipeline stops and rethrows that error; if the
/// task is cancelled, it stops and throws `CancellationError`. Either way, no stage is
/// still running, or starts, after it returns.
func runPipeline<Source: AsyncSequence & Sendable, Output: Sendable>(
  source: Source,
  workers: Int,
  transform: @escaping @Sendable (Source.Element) async throws -> Output,
  consume: @escaping @Sendable (Output) async throws -> Void
) async throws where Source.Element: Sendable {
  // TODO: Run the pipeline described above: its stages at the same time, at most `workers`
  // transforms at once, and nothing still running when it returns or throws.
  throw Unfinished()
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
