import MiniLegacy

/// A main-actor model whose legacy callback runs on a background queue.
@MainActor
public final class Model {
  public private(set) var value = 0

  public init() {}

  public func load() {
    deliverLater(3) { delivered in
      self.value = delivered
    }
  }
}
