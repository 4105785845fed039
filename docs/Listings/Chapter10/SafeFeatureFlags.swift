import Synchronization

// listing: safe
/// App-wide switches, read by every screen and changed by the settings screen.
final class FeatureFlags: Sendable {
  static let current = FeatureFlags()

  private let state = Mutex((isBetaEnabled: false, enabledExperiments: Set<String>()))

  var isBetaEnabled: Bool {
    get { state.withLock { $0.isBetaEnabled } }
    set { state.withLock { $0.isBetaEnabled = newValue } }
  }

  /// One locked step reads and changes: no other thread can slip in between.
  func toggle(_ experiment: String) {
    state.withLock { state in
      if state.enabledExperiments.remove(experiment) == nil {
        state.enabledExperiments.insert(experiment)
      }
    }
  }
}
// listing: end
