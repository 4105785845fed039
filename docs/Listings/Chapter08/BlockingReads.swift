// Chapter 8, exercise 8.4: blocking reads on a thread of their own, handed to async code
// as a stream of chunks.
import Foundation

func chunks(of handle: FileHandle) -> AsyncStream<Data> {
  // listing: thread
  let (chunks, sink) = AsyncStream.makeStream(of: Data.self)
  Thread {
    while case let data = handle.availableData, !data.isEmpty {  // blocks until bytes come
      sink.yield(data)
    }
    sink.finish()  // an empty read: end of file
  }.start()
  // listing: end
  return chunks
}
