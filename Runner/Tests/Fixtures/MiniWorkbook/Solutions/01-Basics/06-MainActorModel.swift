import MiniLegacy

/// A main-actor model whose legacy callback runs on a background queue.
@MainActor
public final class Model {
  public private(set) var value = 0

  public init() {}

  public func load() {
    // A @Sendable callback is not main-actor isolated; it hops back explicitly.
    deliverLater(3) { @Sendable delivered in
      Task { @MainActor in self.value = delivered }
    }
  }
}
