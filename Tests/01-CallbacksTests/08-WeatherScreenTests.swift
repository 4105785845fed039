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

/// What the model shows when `refresh(city:)` returns: read in the same main-actor job as the
/// return, before anything else can run, as a caller that awaits `refresh(city:)` reads it.
struct Shown: Sendable {
  var screen: WeatherScreen?
  var failure: (any Error)?
  var progress: [Double]

  @MainActor
  init(_ model: WeatherScreenModel) {
    screen = model.screen
    failure = model.failure
    progress = model.progressShown
  }

  /// Screen and failure are the same (progress is checked on its own).
  func showsTheSame(as other: Shown) -> Bool {
    screen == other.screen
      && String(describing: failure) == String(describing: other.failure)
  }
}

/// Callbacks on the main queue, as many an app's SDK makes them.
private let onTheMainQueue = CallbackScript(
  timing: .scheduled(
    CallbackScheduler(name: "the main queue") { work in DispatchQueue.main.async(execute: work) }))

/// The contract of `refresh(city:)`: each path, what the screen shows, and the test that
/// checks it (— where a column does not apply, and why). Every refresh goes through
/// `refresh(_:city:)`, which reads the model in the job `refresh(city:)` returns in and
/// fails a model that changes only after that: the state is checked at return on every path.
///
/// | path | screen, failure (at return) | SDK requests | progress bar | thread, actor, timing |
/// | --- | --- | --- | --- | --- |
/// | conditions, forecast, radar | the screen, failure nil: `showsEverything` | conditions first, then forecast (5 days, its station) and radar, once each: `showsEverything` | — | any thread, inside the call, later: `showsEverything`; no main-actor trap: every test |
/// | cached forecast + error (`.stale`, or any other) | shown with the error as warning: `cachedForecastShowsWithItsWarning` | — | — | — |
/// | no radar map | shown without a map: `noRadar` | — | nothing arrives, nothing waited for: `noRadar` | — |
/// | conditions error | its error, screen nil: `conditionsErrorFails`; offline too, not turned into another: `conditionsOfflineFails` | nothing more asked: `conditionsErrorFails` | — | — |
/// | forecast error | its error, screen nil: `forecastErrorFails` | — | — | — |
/// | forecast (nil, nil) | `EmptyForecast`, screen nil: `emptyForecastFails` | — | — | — |
/// | 300 progress values | — | — | all, once, in order, on the bar when refresh returns, none later: `progressReachesTheBar` (a value equal to the one the bar already shows may be skipped: the bar looks the same; a `Task { @MainActor }` per value is allowed: Swift 6.3 puts such a task straight on the main queue, in the order made, as `DispatchQueue.main.async` does, so the values come in order and before the completion's resume; not caught: a radar started before the forecast (`async let`) whose last values are still queued for the main actor when refresh, already queued there, finds the radar done and returns: it takes the main actor busy at that very moment, seen once under ten busy loops) | reported inside the call, on another thread, or on the main queue: `progressReachesTheBar` |
/// | slow SDK | — | — | — | the main actor stays free while the conditions wait: `leavesTheMainActorFree`; a radar 2.5 s late blocks no thread and not the main actor: `slowRadar` |
/// | refreshed again | the newest outcome replaces the old one: `refreshingAgain` | the same city asked about again: `refreshingAgain` | — | — |
/// | two refreshes at once | — the doc comment promises nothing for overlapping refreshes | | | |
/// | cancelled (before, during, after) | — the SDK cannot cancel, and refresh(city:) promises nothing for a cancelled task: it finishes | | | |
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

  /// Runs `refresh(city:)` within the deadline and returns what the model showed when it
  /// returned, read before anything else could run on the main actor.
  ///
  /// Then lets the main actor run what was queued for it meanwhile: a model whose screen or
  /// failure changes only now was updated after `refresh(city:)` had returned, and fails.
  @discardableResult
  static func refresh(
    _ model: WeatherScreenModel, city: String, hint: String = hint,
    limit: Duration = .seconds(2), sourceLocation: SourceLocation = #_sourceLocation
  ) async throws -> Shown {
    let shown = try await withDeadline(limit, name, hint: hint, sourceLocation: sourceLocation) {
      await refreshAndLook(model, city: city)
    }
    await letTheMainActorCatchUp()
    let later = Shown(model)
    let settled = later.showsTheSame(as: shown)
    #expect(
      settled,
      """
      refresh(city:) returned before the model showed its outcome: when it returned, the \
      screen was \(describe(shown.screen)) and the failure \(describe(shown.failure)); only \
      afterwards did they become \(describe(later.screen)) and \(describe(later.failure)). A \
      caller that awaits refresh(city:) reads the model right after the await, so the \
      outcome must be there by then: work handed to a queue or a task runs too late
      """, sourceLocation: sourceLocation)
    return shown
  }

  /// Awaits `refresh(city:)` and reads the model in the same job as the return: nothing
  /// queued for the main actor has run since.
  static func refreshAndLook(_ model: WeatherScreenModel, city: String) async -> Shown {
    await model.refresh(city: city)
    return Shown(model)
  }

  /// Returns once whatever was queued for the main actor before this call has run: one trip
  /// through the main queue (first in, first out) and a few through the main actor.
  static func letTheMainActorCatchUp() async {
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      DispatchQueue.main.async { done.resume() }
    }
    for _ in 0..<10 { await Task.yield() }
  }

  static func describe(_ screen: WeatherScreen?) -> String {
    screen.map { "the screen of \($0.conditions.city)" } ?? "nil"
  }

  static func describe(_ failure: (any Error)?) -> String {
    failure.map { "\($0)" } ?? "nil"
  }

  /// What went wrong when the screen is not `expected` right after a refresh.
  static func wrongScreen(_ shown: Shown, expected: WeatherScreen) -> Comment {
    guard let screen = shown.screen else {
      if let failure = shown.failure {
        return "refresh(city:) failed with \(failure) although every part of the screen loaded"
      }
      return """
        refresh(city:) returned before showing the screen: when it returns, screen must \
        already hold what the SDK sent (a caller reads it right after the await), and it was \
        still nil
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

    let shown = try await Self.refresh(model, city: "London")

    #expect(shown.screen == Sky.londonScreen, Self.wrongScreen(shown, expected: Sky.londonScreen))
    #expect(shown.failure == nil, "a refresh that succeeded must leave failure nil")
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

  @Test(
    "Shows a cached forecast with its warning when the forecast comes with an error, whichever",
    arguments: [ForecastError.stale, .offline])
  func cachedForecastShowsWithItsWarning(warning: ForecastError) async throws {
    let client = Sky.client()
    client.forecastReply = .valueAndError(warning)
    let model = WeatherScreenModel(client: client)

    let shown = try await Self.refresh(
      model, city: "London",
      hint: "the (forecast, error) reply never resumes; show the forecast with its warning")

    var expected = Sky.londonScreen
    expected.forecastWarning = warning
    #expect(
      shown.failure == nil,
      """
      refresh(city:) failed with \(String(describing: shown.failure)) when the forecast came \
      with the error .\(warning): a forecast that comes with an error, whatever the error, \
      must be shown, with the error as its forecastWarning, not thrown away
      """)
    #expect(shown.screen == expected, Self.wrongScreen(shown, expected: expected))
    #expect(
      shown.screen?.forecastWarning == warning,
      """
      the forecast is shown without its warning .\(warning): the error that came with it must \
      be the screen's forecastWarning (the "may be out of date" banner)
      """)
  }

  @Test(
    "A conditions error is the refresh's failure, and nothing more is asked",
    arguments: [CallbackScript.synchronously, .default])
  func conditionsErrorFails(script: CallbackScript) async throws {
    let client = Sky.client(conditions: script)
    let model = WeatherScreenModel(client: client)

    let shown = try await Self.refresh(
      model, city: "Atlantis",
      hint: "the conditions' .failure case never resumes: the screen waits forever for a city "
        + "the station does not know")

    #expect(
      shown.failure as? ForecastError == .unknownCity("Atlantis"),
      """
      refresh(city:) should fail with the conditions' own error unknownCity("Atlantis"), not \
      \(String(describing: shown.failure))
      """)
    #expect(shown.screen == nil, "a refresh that failed must leave screen nil")
    #expect(
      client.events == [.conditionsRequested(city: "Atlantis")],
      """
      without conditions there is no station to ask: after a conditions error refresh(city:) \
      must ask for nothing more, but it asked: \(client.events)
      """)
  }

  @Test(
    "Whatever the conditions' error, it is the refresh's failure: offline is not an unknown city")
  func conditionsOfflineFails() async throws {
    let client = Sky.client()
    client.isOnline = false
    let model = WeatherScreenModel(client: client)

    let shown = try await Self.refresh(
      model, city: "London", hint: "the conditions' .failure case never resumes")

    #expect(
      shown.failure as? ForecastError == .offline,
      """
      the service was offline, so the conditions failed with offline, and refresh(city:) \
      ended with \(String(describing: shown.failure)): the failure the screen shows must be \
      the SDK's own error, whichever it is, not one made up in its place (try? turns every \
      error into the same one)
      """)
    #expect(shown.screen == nil, "a refresh that failed must leave screen nil")
  }

  @Test(
    "A forecast error is the refresh's failure",
    arguments: [CallbackScript.synchronously, .default])
  func forecastErrorFails(script: CallbackScript) async throws {
    let client = Sky.client(forecast: script)
    client.forecastReply = .error(.offline)
    let model = WeatherScreenModel(client: client)

    let shown = try await Self.refresh(
      model, city: "London", hint: "the forecast's (nil, error) reply never resumes")

    #expect(
      shown.failure as? ForecastError == .offline,
      """
      refresh(city:) should fail with the forecast's own error offline, not \
      \(String(describing: shown.failure))
      """)
    #expect(shown.screen == nil, "a refresh that failed must leave screen nil")
  }

  @Test(
    "A forecast of neither value nor error fails with EmptyForecast",
    arguments: [CallbackScript.synchronously, .default])
  func emptyForecastFails(script: CallbackScript) async throws {
    let client = Sky.client(forecast: script)
    client.forecastReply = .neither
    let model = WeatherScreenModel(client: client)

    let shown = try await Self.refresh(model, city: "London", hint: Self.neitherHint)

    #expect(
      shown.failure is EmptyForecast,
      """
      the forecast handler got (nil, nil) and refresh(city:) ended with failure \
      \(String(describing: shown.failure)); it must be EmptyForecast()
      """)
    #expect(shown.screen == nil, "a refresh that failed must leave screen nil")
  }

  @Test("A city without radar is shown without a map, even when no progress comes")
  func noRadar() async throws {
    let client = Sky.client()
    client.radarProgress = []
    let model = WeatherScreenModel(client: client)

    let shown = try await Self.refresh(
      model, city: "Paris",
      hint: "the radar's nil reply never resumes (or the code waits for a progress that "
        + "never comes)")

    let expected = WeatherScreen(
      conditions: Sky.paris, forecast: Array(Sky.week.reversed().prefix(5)),
      forecastWarning: nil, radar: nil)
    #expect(
      shown.failure == nil,
      """
      refresh(city:) failed with \(String(describing: shown.failure)) for a city without \
      radar: a nil map means "no radar here", so show the screen without one
      """)
    #expect(shown.screen == expected, Self.wrongScreen(shown, expected: expected))
  }

  @Test(
    "Every radar progress value, 300 of them, is on the bar when refresh(city:) returns, in order",
    arguments: [CallbackScript.synchronously, .default, onTheMainQueue])
  func progressReachesTheBar(script: CallbackScript) async throws {
    let steps = (1...300).map { Double($0) / 300 }
    let client = Sky.client(radar: script)
    client.radarProgress = steps
    let model = WeatherScreenModel(client: client)

    let shown = try await Self.refresh(model, city: "London")

    #expect(shown.screen == Sky.londonScreen, Self.wrongScreen(shown, expected: Sky.londonScreen))
    // Values still on their way when refresh(city:) returned come in now, and are late.
    for _ in 0..<200 where model.progressShown.count < steps.count {
      try await Task.sleep(for: .milliseconds(5))
    }
    let fault = EventOrder.fault(
      received: model.progressShown, expected: steps, endedAfter: shown.progress.count)
    let shownAtAll = model.progressShown
    let message: String
    switch fault {
    case nil:
      message = ""
    case .missing(let count, _, _) where count == steps.count:
      message = """
        the progress bar showed nothing, not the \(steps.count) values the radar reported \
        (\(steps.first!) to \(steps.last!)): pass each progress value on to radarProgress, \
        on the main actor
        """
    case .late:
      message = """
        refresh(city:) returned before the progress bar had shown every value the radar \
        reported: \(fault!). The radar's completion comes after its last progress value, \
        and so must the screen: a value still on its way to the main actor when \
        refresh(city:) returns moves the bar after the map is shown (or during the next \
        refresh)
        """
    case .missing, .unexpected, .duplicated, .outOfOrder:
      message = """
        the progress bar showed \(shownAtAll.count) values, not the \(steps.count) the radar \
        reported, once each and in order: \(fault!). Every value must reach radarProgress, \
        in the order the SDK reported it
        """
    }
    #expect(fault == nil, Comment(rawValue: message))
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
    #expect(model.screen == Sky.londonScreen, "after the refresh, the screen must show London")
  }

  @Test("A radar that takes 2.5 seconds blocks neither the main actor nor any other thread")
  func slowRadar() async throws {
    // Longer than the watchdog's patience (1.5 s): whatever waits for the radar by blocking
    // a thread (a semaphore, a group, a sleep loop), on the main actor or in a task it
    // started, is seen blocking, and named.
    let client = Sky.client(radar: .later(.milliseconds(2500)))
    let model = WeatherScreenModel(client: client)

    let shown = try await Self.refresh(
      model, city: "London", hint: "the radar's completion never resumes", limit: .seconds(6))

    #expect(shown.screen == Sky.londonScreen, Self.wrongScreen(shown, expected: Sky.londonScreen))
  }

  @Test("Refreshing again shows the new city, or the new failure")
  func refreshingAgain() async throws {
    let client = Sky.client()
    let model = WeatherScreenModel(client: client)

    let first = try await Self.refresh(model, city: "London")
    #expect(first.screen == Sky.londonScreen, Self.wrongScreen(first, expected: Sky.londonScreen))

    let second = try await Self.refresh(model, city: "Atlantis")
    #expect(
      second.screen == nil,
      "after a failed refresh the screen must be cleared, not keep showing \(second.screen?.conditions.city ?? "")"
    )
    #expect(
      second.failure as? ForecastError == .unknownCity("Atlantis"),
      "the second refresh failed, so failure must be its error")

    client.radarProgress = []
    let third = try await Self.refresh(model, city: "Paris")
    let askedForParis = client.events.contains(.conditionsRequested(city: "Paris"))
    #expect(
      third.screen?.conditions == Sky.paris,
      Comment(
        rawValue: "the third refresh must show Paris"
          + (askedForParis
            ? ""
            : ", but it never asked the SDK for Paris: after a failed refresh, the next one "
              + "must run in full (was something the failure left set, a flag or a stored "
              + "task, taken for a refresh still running?)")))
    #expect(third.failure == nil, "a refresh that succeeded must clear the earlier failure")

    // The weather changes: a city refreshed again is asked about again, whatever came before.
    let fourth = try await Self.refresh(model, city: "London")
    let londonAsks = client.events.filter { $0 == .conditionsRequested(city: "London") }.count
    #expect(
      londonAsks == 2 && fourth.screen == Sky.londonScreen,
      "refreshing London a second time asked the SDK for its current conditions \(londonAsks == 1 ? "only once, the first time" : "\(londonAsks) times"): a refresh shows the weather as it is now, so every refresh asks for the conditions again; a city's earlier answer is not kept for the next refresh"
    )
  }
}
