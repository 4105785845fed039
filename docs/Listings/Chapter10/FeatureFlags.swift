// listing: legacy-groups MutableGlobalVariable
// listing: legacy
/// App-wide switches, read by every screen and changed by the settings screen.
final class FeatureFlags {
  static var current = FeatureFlags()

  var isBetaEnabled = false
  var enabledExperiments: Set<String> = []
}

/// How many times the app was opened, for the "rate this app" prompt.
var launchCount = 0
// listing: end
