// Chapter 7, exercise 7.3: legacy work added to a scope that cancels it.
import CoroutineKit
import Dispatch

final class SearchIndex: @unchecked Sendable {
  func lookup(_ text: String) -> CoFuture<[String]> {
    CoFuture(value: [text])
  }
}

final class SearchScreen {
  private let scope = CoScope()
  private let queue = DispatchQueue(label: "search")
  private let index = SearchIndex()

  func search(_ text: String) {
    let index = self.index
    // listing: added
    queue.coroutineFuture { try index.lookup(text).await() }.added(to: scope)
    // listing: end
  }
}
