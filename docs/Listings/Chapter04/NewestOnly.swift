// Chapter 4, exercise 4.3: a stream that keeps only the newest value for a slow consumer.
import LegacyKit

/// A made-up download that reports its progress, from 0 to 1, to a closure.
final class Download: @unchecked Sendable {
  func observeProgress(_ handler: @escaping (Double) -> Void, done: @escaping () -> Void) {
    CallbackScript.default.deliver {
      for percent in 0...100 { handler(Double(percent) / 100) }
      done()
    }
  }
}

// listing: newest
func progress(of download: Download) -> AsyncStream<Double> {
  AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
    download.observeProgress { fraction in
      continuation.yield(fraction)  // replaces a value nobody has read yet
    } done: {
      continuation.finish()
    }
  }
}
// listing: end
