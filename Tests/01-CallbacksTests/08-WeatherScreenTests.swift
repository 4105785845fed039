import Dispatch
import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import Callbacks

/// A small world for the weather SDK: two cities with a station each, one with radar.
private enum Sky {
  static let london = SkyConditions(
    city: "London", celsius: 11.5, summary: "drizzle", stationID: "EGLL")
  static let paris = SkyConditions(
    city: "Paris", celsius: 17, summary: "sunny spells", stationID: "LFPG")
  static let week = (1...7).map { DayForecast(day: $0, high: 12 + Double($0), low: 5) }
  static let londonRadar = RadarMap(city: "London", frames: 24)

  static func client(
    conditions: CallbackScript = .default,
    forecast: CallbackScript = .default,
    radar: CallbackScript = .default
  ) -> ForecastClient {
    ForecastClient(
      conditions: [london, paris],
      forecasts: ["EGLL": week, "LFPG": Array(week.reversed())],
      radarMaps: [londonRadar],
      conditionsScript: conditions, forecastScript: forecast, radarScript: radar)
  }

  /// What the screen should show for London with a fresh forecast.
  static let londonScreen = WeatherScreen(
    conditions: london, forecast: Array(week.prefix(5)), forecastWarning: nil,
    radar: londonRadar)
}

// The model is main-actor isolated, so these tests run on the main actor too.
@MainActor
@Suite("1.8 Weather screen (challenge)")
struct WeatherScreenTests {
  static let name = "refresh(city:)"
  static let hint =
    "one of the SDK's handlers never resumes its continuation, or refresh(city:) never "
    + "awaits it"
  static let neitherHint =
    "the forecast's (nil, nil) reply never resumes; it must end the refresh with the "
    + "failure EmptyForecast()"

  /// Runs `refresh(city:)` within the deadline.
  static func refresh(
    _ model: WeatherScreenModel, city: String, hint: String = hint,
    sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    try await withDeadline(.seconds(2), name, hint: hint, sourceLocation: sourceLocation) {
      await model.refresh(city: city)
    }
  }

  /// What went wrong when the screen is not `expected` right after a refresh.
  static func wrongScreen(_ model: WeatherScreenModel, expected: WeatherScreen) -> Comment {
    guard let screen = model.screen else {
      if let failure = model.failure {
        return "refresh(city:) failed with \(failure) although every part of the screen loaded"
      }
      return """
        refresh(city:) returned before showing the screen: it must await every part (suspend \
        on a continuation for each SDK call) and set screen itself, not leave it to a task \
        or queue that runs later
        """
    }
    if screen.conditions != expected.conditions {
      return "the screen shows the conditions \(screen.conditions), not \(expected.conditions)"
    }
    if screen.forecast != expected.forecast {
      return """
        the screen shows a forecast of \(screen.forecast.count) days that is not the one \
        the SDK sent (ask for 5 days of the station the conditions name)
        """
    }
    if screen.radar != expected.radar {
      return Comment(
        rawValue: "the screen shows the radar \(String(describing: screen.radar)), not "
          + "\(String(describing: expected.radar))")
    }
    return "the screen shows \(screen), not \(expected)"
  }

  @Test(
    "Shows conditions, forecast and radar wherever the SDK calls back",
    arguments: [CallbackScript.synchronously, .default, .later(.milliseconds(100))])
  func showsEverything(script: CallbackScript) async throws {
    let client = Sky.client(conditions: script, forecast: script, radar: script)
    let model = WeatherScreenModel(client: client)

    try await Self.refresh(model, city: "London")

    #expect(model.screen == Sky.londonScreen, Self.wrongScreen(model, expected: Sky.londonScreen))
    #expect(model.failure == nil, "a refresh that succeeded must leave failure nil")
    let requested = client.events.filter {
      if case .radarDelivered = $0 { return false } else { return true }
    }
    #expect(
      requested.first == .conditionsRequested(city: "London")
        && requested.count == 3
        && requested.contains(.forecastRequested(station: "EGLL", days: 5))
        && requested.contains(.radarRequested(city: "London")),
      """
      refresh(city:) should ask for the conditions first, then the 5-day forecast of the \
      station they name and the radar, each once; it asked: \(requested)
      """)
  }

  @Test("Shows a cached forecast with its warning when the forecast comes with an error")
  func cachedForecastShowsWithItsWarning() async throws {
    let client = Sky.client()
    client.forecastReply = .valueAndError(.stale)
    let model = WeatherScreenModel(client: client)

    try await Self.refresh(
      model, city: "London",
      hint: "the (forecast, error) reply never resumes; show the forecast with its warning")

    var expected = Sky.londonScreen
    expected.forecastWarning = .stale
    #expect(
      model.failure == nil,
      """
      refresh(city:) failed with \(String(describing: model.failure)) when the forecast came \
      from the cache with a warning: a forecast that comes with an error must be shown, with \
      the error as its forecastWarning, not thrown away
      """)
    #expect(model.screen == expected, Self.wrongScreen(model, expected: expected))
    #expect(
      model.screen?.forecastWarning == .stale,
      """
      the cached forecast is shown without its warning: the error that came with it must be \
      the screen's forecastWarning (the "may be out of date" banner)
      """)
  }

  @Test(
    "A conditions error is the refresh's failure, and nothing more is asked",
    arguments: [CallbackScript.synchronously, .default])
  func conditionsErrorFails(script: CallbackScript) async throws {
    let client = Sky.client(conditions: script)
    let model = WeatherScreenModel(client: client)

    try await Self.refresh(
      model, city: "Atlantis",
      hint: "the conditions' .failure case never resumes; resume(with: result) handles both")

    #expect(
      model.failure as? ForecastError == .unknownCity("Atlantis"),
      """
      refresh(city:) should fail with the conditions' own error unknownCity("Atlantis"), not \
      \(String(describing: model.failure))
      """)
    #expect(model.screen == nil, "a refresh that failed must leave screen nil")
    #expect(
      client.events == [.conditionsRequested(city: "Atlantis")],
      """
      without conditions there is no station to ask: after a conditions error refresh(city:) \
      must ask for nothing more, but it asked: \(client.events)
      """)
  }

  @Test(
    "A forecast error is the refresh's failure",
    arguments: [CallbackScript.synchronously, .default])
  func forecastErrorFails(script: CallbackScript) async throws {
    let client = Sky.client(forecast: script)
    client.forecastReply = .error(.offline)
    let model = WeatherScreenModel(client: client)

    try await Self.refresh(
      model, city: "London", hint: "the forecast's (nil, error) reply never resumes")

    #expect(
      model.failure as? ForecastError == .offline,
      """
      refresh(city:) should fail with the forecast's own error offline, not \
      \(String(describing: model.failure))
      """)
    #expect(model.screen == nil, "a refresh that failed must leave screen nil")
  }

  @Test(
    "A forecast of neither value nor error fails with EmptyForecast",
    arguments: [CallbackScript.synchronously, .default])
  func emptyForecastFails(script: CallbackScript) async throws {
    let client = Sky.client(forecast: script)
    client.forecastReply = .neither
    let model = WeatherScreenModel(client: client)

    try await Self.refresh(model, city: "London", hint: Self.neitherHint)

    #expect(
      model.failure is EmptyForecast,
      """
      the forecast handler got (nil, nil) and refresh(city:) ended with failure \
      \(String(describing: model.failure)); it must be EmptyForecast()
      """)
    #expect(model.screen == nil, "a refresh that failed must leave screen nil")
  }

  @Test("A city without radar is shown without a map, even when no progress comes")
  func noRadar() async throws {
    let client = Sky.client()
    client.radarProgress = []
    let model = WeatherScreenModel(client: client)

    try await Self.refresh(
      model, city: "Paris",
      hint: "the radar's nil reply never resumes (or the code waits for a progress that "
        + "never comes)")

    let expected = WeatherScreen(
      conditions: Sky.paris, forecast: Array(Sky.week.reversed().prefix(5)),
      forecastWarning: nil, radar: nil)
    #expect(
      model.failure == nil,
      """
      refresh(city:) failed with \(String(describing: model.failure)) for a city without \
      radar: a nil map means "no radar here", so show the screen without one
      """)
    #expect(model.screen == expected, Self.wrongScreen(model, expected: expected))
  }

  @Test(
    "Every radar progress value reaches the progress bar, in order",
    arguments: [CallbackScript.synchronously, .default])
  func progressReachesTheBar(script: CallbackScript) async throws {
    let steps = (1...20).map { Double($0) / 20 }
    let client = Sky.client(radar: script)
    client.radarProgress = steps
    let model = WeatherScreenModel(client: client)

    try await Self.refresh(model, city: "London")

    #expect(model.screen == Sky.londonScreen, Self.wrongScreen(model, expected: Sky.londonScreen))
    // Values handed to the main actor may still be queued behind this test: let them in.
    for _ in 0..<200 where model.progressShown != steps {
      try await Task.sleep(for: .milliseconds(5))
    }
    let arrived = model.progressShown == steps
    let shown = model.progressShown
    #expect(
      arrived,
      """
      the progress bar showed \(shown.isEmpty ? "nothing" : "\(shown)"), not the \(steps.count) \
      values the radar reported (\(steps.first!) to \(steps.last!)) in order: pass each \
      progress value on to radarProgress, on the main actor
      """)
  }

  @Test("refresh(city:) leaves the main actor free while it waits")
  func leavesTheMainActorFree() async throws {
    // The conditions arrive, on a background thread, only once the test lets them (or after
    // a second, so that a refresh that blocks the main thread cannot hang the tests).
    let gate = DispatchSemaphore(value: 0)
    let held = CallbackScheduler(name: "a background thread, when the test lets it") { work in
      Thread.detachNewThread {
        _ = gate.wait(timeout: .now() + 1)
        work()
      }
    }
    let client = Sky.client(conditions: CallbackScript(timing: .scheduled(held)))
    let model = WeatherScreenModel(client: client)

    let refreshing = Task { await model.refresh(city: "London") }
    // The refresh runs first; the test goes on once the main actor is free again.
    for _ in 0..<100 where client.events.isEmpty { await Task.yield() }
    let screenWhileWaiting = model.screen
    gate.signal()
    try await withDeadline(.seconds(2), Self.name, hint: Self.hint) { await refreshing.value }

    #expect(
      screenWhileWaiting == nil,
      """
      refresh(city:) blocked the main actor instead of suspending: it held the main thread \
      until the SDK answered (a semaphore, a dispatch group or another blocking wait), so \
      nothing else on the main actor could run meanwhile. Suspend on a continuation instead.
      """)
    #expect(model.screen == Sky.londonScreen, Self.wrongScreen(model, expected: Sky.londonScreen))
  }

  @Test("Refreshing again shows the new city, or the new failure")
  func refreshingAgain() async throws {
    let client = Sky.client()
    let model = WeatherScreenModel(client: client)

    try await Self.refresh(model, city: "London")
    #expect(model.screen == Sky.londonScreen, Self.wrongScreen(model, expected: Sky.londonScreen))

    try await Self.refresh(model, city: "Atlantis")
    #expect(
      model.screen == nil,
      "after a failed refresh the screen must be cleared, not keep showing \(model.screen?.conditions.city ?? "")"
    )
    #expect(
      model.failure as? ForecastError == .unknownCity("Atlantis"),
      "the second refresh failed, so failure must be its error")

    client.radarProgress = []
    try await Self.refresh(model, city: "Paris")
    #expect(model.screen?.conditions == Sky.paris, "the third refresh must show Paris")
    #expect(model.failure == nil, "a refresh that succeeded must clear the earlier failure")
  }
}
