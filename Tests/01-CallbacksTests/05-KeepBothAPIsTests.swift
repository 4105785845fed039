import LegacyKit
import Synchronization
import Testing
import WorkbookTesting

@testable import Callbacks

/// The contract of `currentReading(for:)` beside the callback API: each path, what old and
/// new callers see, and the test that checks it (— where a column does not apply, and why).
///
/// | path | result, error | station requests | old call site | thread, timing |
/// | --- | --- | --- | --- | --- |
/// | a reading (inside the call, soon, later) | the reading: `asyncAPIReturnsTheReading` | one: `asyncAPIReturnsTheReading`; one per call, nothing kept for the next: `asksEveryTime` | — | any thread: `asyncAPIReturnsTheReading` |
/// | unknown city, station offline | the station's own error, unchanged: `asyncAPIForwardsErrors` | one, offline too: `asyncAPIForwardsErrors` | — | — |
/// | both APIs on one station | the same reading: `bothAPIsAgree` | one per call: `bothAPIsAgree` | still describes readings and failures: `existingCallSiteStillWorks`; calls back inside the call when the station does: `existingCallSiteKeepsItsTiming` | — |
/// | both APIs at once, many times | every answer right: `bothAPIsConcurrently` | one per call: `bothAPIsConcurrently` | — | — |
/// | answer on the caller's own thread, late | the reading: `asyncAPISuspends` | — | — | suspends, neither blocks nor polls: `asyncAPISuspends` |
/// | slow station (2.5 s) | the reading: `slowStationDoesNotBlock` | — | — | holds no thread of the pool, in any task: `slowStationDoesNotBlock` |
/// | the app's main thread busy | the reading, while it is still busy: `asyncAPIDoesNotWaitForTheMainThread` | — | — | no hop through the main thread: `asyncAPIDoesNotWaitForTheMainThread` |
/// | never answered | — a `WeatherStation` answers every request once; a continuation never resumed fails every test's deadline | | | |
/// | cancelled while it waits | the reading or `CancellationError`, once, and nothing more when the answer comes: `cancelledWhileWaiting` | one: `cancelledWhileWaiting` | — | — |
/// | cancelled before, after | — as "while it waits": the station cannot cancel, so nothing differs | | | |
/// | any city, as given (spaces around it, empty, a newline) | the station's answer for exactly that name, as the callback API gives it: `cityAsGiven` | one: `cityAsGiven` | — | — |
@Suite("1.5 Keep both APIs")
struct KeepBothAPIsTests {
  static let resumeHint =
    "the caller's continuation was never resumed: the completion handler's success path does "
    + "not resume it, or it was lost before the handler ran (another call's took its place, "
    + "or nothing kept it)"

  static let readings = ["Oslo": -3.5, "Lima": 19.0, "Perth": 31.25]
  static let scripts: [CallbackScript] = [.synchronously, .default, .later()]

  /// What went wrong when one call of the async API did not ask `station` exactly once.
  static func askedOnce(_ station: WeatherStation) -> Comment {
    if station.requestCount == 0 {
      return Comment(
        rawValue: "currentReading(for:) returned without asking this station (0 requests): "
          + "each call asks the station it is called on, once; a reading kept from an "
          + "earlier call (a cache) is stale, and may be another station's")
    }
    return "the async API should ask the station exactly once, not \(station.requestCount) times"
  }

  /// Calls the legacy callback API the way old code does, and waits (boundedly) for its answer.
  func callbackReading(
    for city: String, from station: WeatherStation
  ) async throws -> Result<WeatherReading, WeatherStationError> {
    try await withDeadline(
      .seconds(2), "currentReading(for:completion:)",
      hint: "the callback API never answered; it is the station's own code, so report this"
    ) {
      await withCheckedContinuation { continuation in
        station.currentReading(for: city) { result in continuation.resume(returning: result) }
      }
    }
  }

  @Test("The async API returns the reading the station reports", arguments: scripts)
  func asyncAPIReturnsTheReading(script: CallbackScript) async throws {
    let station = WeatherStation(readings: Self.readings, script: script)

    let reading = try await withDeadline(
      .seconds(2), "currentReading(for:)",
      hint: Self.resumeHint
    ) {
      try await station.currentReading(for: "Lima")
    }

    #expect(reading == WeatherReading(city: "Lima", celsius: 19.0))
    #expect(station.requestCount == 1, Self.askedOnce(station))
  }

  @Test(
    "The async API throws the station's own error",
    arguments: scripts, [true, false])
  func asyncAPIForwardsErrors(script: CallbackScript, online: Bool) async throws {
    let station = WeatherStation(readings: Self.readings, script: script)
    station.isOnline = online
    let expected: WeatherStationError = online ? .unknownCity("Atlantis") : .offline

    // The station's own error, unchanged: callers may already switch over its cases.
    await expectThrows(
      expected, from: "currentReading(for:)",
      hint: "the completion handler's failure path never resumes the continuation",
      returned: { reading in
        "currentReading(for:) returned \(reading) although the station reported \(expected): "
          + "throw the station's own error instead of returning a placeholder"
      },
      wrongError: { error in
        "currentReading(for:) threw \(error), not the station's own error \(expected): "
          + "callers already switch over WeatherStationError, so pass it on unchanged"
      }
    ) {
      try await station.currentReading(for: "Atlantis")
    }
    #expect(
      station.requestCount == 1,
      """
      currentReading(for:) asked the station \(station.requestCount) times \
      (\(online ? "online" : "offline")): whether a request can succeed is the station's \
      decision, as it is for the callback API, so each call asks it once, offline or not; \
      a check made beforehand may already be out of date when the request is sent
      """)
  }

  @Test("The async API suspends while it waits, so an answer on its own thread can arrive")
  func asyncAPISuspends() async throws {
    let executor = OneThreadExecutor()
    let station = WeatherStation(readings: Self.readings, script: lateOnThreadOf(executor))

    let outcome = await Result {
      try await expectSuspends(
        "currentReading(for:)",
        hint: Self.resumeHint, on: executor
      ) {
        try await station.currentReading(for: "Oslo")
      }
    }
    if case .failure(let error as WeatherStationError) = outcome {
      Issue.record(
        "currentReading(for:) threw \(error) for a station that answered with a reading after half a second: a late answer is still the answer, so the call waits for the station however long it takes, and passes on only the station's own errors"
      )
      return
    }
    let reading = try outcome.get()
    #expect(reading == WeatherReading(city: "Oslo", celsius: -3.5))
  }

  @Test("Old and new call sites agree on the same station", arguments: scripts)
  func bothAPIsAgree(script: CallbackScript) async throws {
    let station = WeatherStation(readings: Self.readings, script: script)

    let viaCallback = try await callbackReading(for: "Perth", from: station)
    let viaAsync = try await withDeadline(
      .seconds(2), "currentReading(for:)",
      hint: Self.resumeHint
    ) {
      try await station.currentReading(for: "Perth")
    }
    let viaCallbackAgain = try await callbackReading(for: "Perth", from: station)

    #expect(try viaCallback.get() == viaAsync, "the async API must return the station's reading")
    #expect(
      try viaCallbackAgain.get() == viaAsync, "the async API must return the station's reading")
    #expect(station.requestCount == 3, "each call, through either API, is one request")
  }

  @Test("The existing callback call site still describes the weather and its failures")
  func existingCallSiteStillWorks() async throws {
    let station = WeatherStation(readings: Self.readings)
    func describe(_ city: String) async throws -> String {
      try await withDeadline(
        .seconds(2), "describeWeather(in:from:completion:)",
        hint: "the existing callback call site no longer calls its completion handler"
      ) {
        await withCheckedContinuation { continuation in
          describeWeather(in: city, from: station) { continuation.resume(returning: $0) }
        }
      }
    }

    #expect(try await describe("Oslo") == "Oslo: -3.5 °C")
    let reading = try await withDeadline(
      .seconds(2), "currentReading(for:)",
      hint: Self.resumeHint
    ) {
      try await station.currentReading(for: "Oslo")
    }
    #expect(reading.description == "Oslo: -3.5 °C", "both APIs should report the same reading")
    #expect(try await describe("Atlantis") == "Atlantis: unavailable (unknownCity(\"Atlantis\"))")
  }

  @Test("The existing call site still calls back inside the call when the station does")
  func existingCallSiteKeepsItsTiming() async throws {
    let station = WeatherStation(readings: Self.readings, script: .synchronously)
    let description = Mutex<String?>(nil)

    describeWeather(in: "Oslo", from: station) { text in
      description.withLock { $0 = text }
    }
    let atReturn = description.withLock { $0 }

    #expect(
      atReturn == "Oslo: -3.5 °C",
      """
      describeWeather(in:from:completion:) had not called its completion when it returned \
      (got \(atReturn.map { "\"\($0)\"" } ?? "nothing")), although the station answered \
      inside the call: the existing call site now goes a different way and calls back \
      later. Old call sites rely on how it behaves today, so it must stay as it is
      """)
  }

  @Test("The async API returns while the app's main thread is busy: it does not need it")
  func asyncAPIDoesNotWaitForTheMainThread() async throws {
    let station = WeatherStation(readings: Self.readings, script: .default)

    let (reading, inTime) = try await withDeadline(
      .seconds(4), "currentReading(for:)",
      hint: Self.resumeHint
    ) {
      try await whileTheMainThreadIsBusy { try await station.currentReading(for: "Oslo") }
    }

    #expect(reading.description == "Oslo: -3.5 °C")
    #expect(inTime, waitedForTheMainThread("currentReading(for:)"))
  }

  @Test("Both APIs can be used at once, many times, on one station")
  func bothAPIsConcurrently() async throws {
    let station = WeatherStation(readings: Self.readings, script: .later(.milliseconds(20)))
    let cities = Array(Self.readings.keys) + ["Atlantis"]

    let answers = try await withDeadline(
      .seconds(2), "concurrent currentReading(for:) calls",
      hint:
        "the completion handler's failure path never resumes the continuation (one city is "
        + "unknown), or some call never resumes it"
    ) {
      try await withThrowingTaskGroup(of: (String, String, String).self) { group in
        for round in 0..<5 {
          for city in cities {
            group.addTask {
              // Even rounds use the callback API, odd rounds the async one.
              if round.isMultiple(of: 2) {
                let result = await withCheckedContinuation { continuation in
                  station.currentReading(for: city) { continuation.resume(returning: $0) }
                }
                return (city, "callback", Self.summary(of: result))
              }
              do {
                let reading = try await station.currentReading(for: city)
                return (city, "async", Self.summary(of: Result<_, any Error>.success(reading)))
              } catch {
                return (city, "async", Self.summary(of: Result<WeatherReading, _>.failure(error)))
              }
            }
          }
        }
        return try await group.reduce(into: []) { $0.append($1) }
      }
    }

    #expect(answers.count == 5 * cities.count)
    let requests = station.requestCount
    #expect(
      requests == 5 * cities.count,
      Comment(
        rawValue: requests < 5 * cities.count
          ? "\(5 * cities.count) calls made at the same time, several for each city, sent "
            + "only \(requests) requests to the station: calls for one city that overlapped "
            + "shared a request (or an answer kept from another call); each call asks the "
            + "station itself, as the callback API does"
          : "\(5 * cities.count) calls sent \(requests) requests to the station: each call "
            + "asks it exactly once"))
    for (city, api, summary) in answers {
      let expected = Self.readings[city].map { "\($0)" } ?? "unknownCity(\"\(city)\")"
      #expect(summary == expected, Self.mismatch(api: api, city: city, summary, expected))
    }
  }

  /// What went wrong when one call in `bothAPIsConcurrently` answered `summary`.
  static func mismatch(
    api: String, city: String, _ summary: String, _ expected: String
  )
    -> Comment
  {
    guard api == "async", readings[city] == nil else {
      return "the \(api) API answered \(summary) for \(city), not \(expected)"
    }
    if Double(summary) != nil {
      return """
        currentReading(for:) returned \(summary) °C for \(city) although the station \
        reported \(expected): throw the station's own error instead of returning a placeholder
        """
    }
    return """
      currentReading(for:) threw \(summary) for \(city), not the station's own error \
      \(expected): callers already switch over WeatherStationError, so pass it on unchanged
      """
  }

  static func summary<E: Error>(of result: Result<WeatherReading, E>) -> String {
    switch result {
    case .success(let reading): "\(reading.celsius)"
    case .failure(let error): "\(error)"
    }
  }

  @Test("The async API suspends while a slow station answers, holding no thread")
  func slowStationDoesNotBlock() async throws {
    // The station answers after 2.5 s: long enough that a thread held while waiting for it
    // (a group's wait, a semaphore, in this task or in a detached one) is noticed.
    let station = WeatherStation(readings: Self.readings, script: .later(.milliseconds(2500)))

    let reading = try await withDeadline(
      .seconds(10), "currentReading(for:)",
      hint: """
        currentReading(for:) holds a thread of the concurrency pool while the station \
        works; moving the wait into another task still holds a thread, so suspend on a \
        continuation instead
        """
    ) {
      try await station.currentReading(for: "Perth")
    }

    #expect(reading == WeatherReading(city: "Perth", celsius: 31.25))
  }

  @Test(
    "A call whose task is cancelled while it waits ends once, with the reading or CancellationError"
  )
  func cancelledWhileWaiting() async throws {
    let (script, delivered) = countedLater()
    let station = WeatherStation(readings: Self.readings, script: script)

    let ending = try await endingOfACallCancelledWhileWaiting(
      "currentReading(for:)", hint: Self.resumeHint, asked: { station.requestCount > 0 },
      answered: { delivered.value > 0 }
    ) {
      try await station.currentReading(for: "Lima")
    }

    expectAnswerOrCancellation(
      ending, WeatherReading(city: "Lima", celsius: 19.0), called: "reading",
      from: "currentReading(for:)", while: "the station worked")
    #expect(station.requestCount == 1, Self.askedOnce(station))
  }

  @Test("Every call of the async API asks the station, which may have gone offline since")
  func asksEveryTime() async throws {
    let station = WeatherStation(readings: Self.readings, script: .default)

    let first = try await withDeadline(.seconds(2), "currentReading(for:)", hint: Self.resumeHint) {
      try await station.currentReading(for: "Lima")
    }
    let again = try await withDeadline(.seconds(2), "currentReading(for:)", hint: Self.resumeHint) {
      try await station.currentReading(for: "Lima")
    }
    station.isOnline = false
    let offline = try await withDeadline(.seconds(2), "currentReading(for:)", hint: Self.resumeHint)
    {
      await Result { try await station.currentReading(for: "Lima") }
    }

    let stillOnline = if case .success = offline { true } else { false }
    #expect(
      first == again && station.requestCount == 3 && !stillOnline,
      "three calls for Lima, the last once the station had gone offline, asked the station \(station.requestCount) time\(station.requestCount == 1 ? "" : "s")\(stillOnline ? ", and the last still returned a reading" : ""): a reading is the station's answer now, so every call asks it; a reading kept from an earlier call is stale, and hides a station that went offline"
    )
  }

  @Test(
    "The async API passes any city to the station as given, as the callback API does",
    arguments: [" Oslo ", "", "Oslo\n"])
  func cityAsGiven(city: String) async throws {
    // This station knows the names exactly as written, and a different reading for the
    // trimmed "Oslo": an answer for another name is told apart from the right one.
    let station = WeatherStation(
      readings: ["Oslo": -3.5, " Oslo ": 4.0, "": 7.5, "Oslo\n": 11.0], script: .default)

    let received = try await withDeadline(
      .seconds(2), "currentReading(for:)", hint: Self.resumeHint
    ) {
      await Result { try await station.currentReading(for: city) }
    }

    let answer =
      switch received {
      case .success(let reading):
        "returned \(reading.city.debugDescription) at \(reading.celsius) °C"
      case .failure(let error): "threw \(error)"
      }
    let right = if case .success(let reading) = received { reading.city == city } else { false }
    #expect(
      right && station.requestCount == 1,
      "currentReading(for: \(city.debugDescription)) \(answer) after asking the station \(station.requestCount) time\(station.requestCount == 1 ? "" : "s"), where the callback API gives the station's own answer for \(city.debugDescription): the async API is the same request in another shape, so the city goes to the station as it was given, whatever it is; deciding for the station what a name should be makes the two APIs answer differently"
    )
  }
}
