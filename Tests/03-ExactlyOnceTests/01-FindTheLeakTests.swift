import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import ExactlyOnce

/// The contract of `loadProfileCard(id:from:)`: each path, what the caller sees, and the
/// test that checks it (— where a column does not apply, and why).
///
/// | path | result, error | requests | thread, timing |
/// | --- | --- | --- | --- |
/// | an account with an avatar (inside the call, soon, later) | name and avatar: `loadsTheAvatar` | one account request, one avatar request: `loadsTheAvatar` | any thread: `loadsTheAvatar` |
/// | an account without an avatar | a card with no avatar, not a hang: `loadsACardWithoutAvatar` | one of each, (nil, nil) not asked again: `loadsACardWithoutAvatar` | — |
/// | an avatar of zero bytes | a card with that empty avatar, not none: `emptyAvatarIsAnAvatar` | — | — |
/// | an account whose avatar key is empty | the avatar stored under that key: `emptyKeyIsAsked` | one avatar request: the key is the service's to read, not the caller's: `emptyKeyIsAsked` | — |
/// | an unknown account | the service's error: `unknownAccountThrows` | no avatar asked for: `unknownAccountThrows` | — |
/// | the avatar fails to send | the service's error: `brokenAvatarThrows` | one avatar request, no retry: `brokenAvatarThrows` | — |
/// | without an avatar, then with one, on one service | each its own card: `reuse` | — | — |
/// | a slow avatar server (2.5 s) | the card: `slowAvatarDoesNotBlock` | — | holds no thread of the pool, in any task: `slowAvatarDoesNotBlock` |
/// | two calls at once | — each call has continuations of its own and shares nothing but the service | | |
/// | the same card twice from one service | the same card: `sameCardTwiceAsksTwice` | two of each request, nothing kept between calls: `sameCardTwiceAsksTwice` | — |
/// | an id unknown to one service, then asked of one that knows it | the service's error, then the card: `unknownIdIsAskedAgain` | each service asked: `unknownIdIsAskedAgain` | — |
/// | cancelled task (before, during, after) | the whole card or CancellationError, never a card missing its avatar: `cancelledTaskGetsTheCardOrThrows` | — the service cannot cancel | — |
@Suite("3.1 Find the leak")
struct FindTheLeakTests {
  static let scripts: [CallbackScript] = [.synchronously, .default, .later(.milliseconds(200))]

  static let portrait = Data("a portrait, 96 by 96 pixels".utf8)
  static let ada = AccountRecord(id: 1, displayName: "Ada", avatarKey: "avatars/ada")
  static let grace = AccountRecord(id: 2, displayName: "Grace", avatarKey: "avatars/grace")
  static let linus = AccountRecord(id: 3, displayName: "Linus", avatarKey: "avatars/linus")

  /// Ada has an avatar, Grace never uploaded one, and Linus's fails to send.
  static func makeService(script: CallbackScript) -> AccountService {
    AccountService(
      accounts: [ada, grace, linus], avatars: [ada.avatarKey: portrait],
      brokenAvatars: [linus.avatarKey], script: script)
  }

  static let hint =
    "a path in one of the helpers returns without resuming its continuation; the line "
    + "\"the runtime said:\" below names the helper"

  @Test("Loads the name and the avatar of an account that has one", arguments: scripts)
  func loadsTheAvatar(script: CallbackScript) async throws {
    let service = Self.makeService(script: script)

    let card = try await withDeadline(.seconds(2), "loadProfileCard(id:from:)", hint: Self.hint) {
      try await loadProfileCard(id: Self.ada.id, from: service)
    }

    #expect(card == ProfileCard(name: "Ada", avatar: Self.portrait))
    expectOneRequestEach(service)
  }

  /// One card, one request of each kind: the bridge answers with what the service said.
  /// `askedAgain` says why, when the service was asked more than once.
  private func expectOneRequestEach(
    _ service: AccountService,
    askedAgain: String = "the bridge passes on what the service answered, a failure included; "
      + "asking again is the caller's choice",
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let (accounts, avatars) = (service.accountRequests, service.avatarRequests)
    let oneOfEach = accounts == 1 && avatars == 1
    #expect(
      oneOfEach,
      Comment(
        rawValue: "one card took \(accounts) account request(s) and \(avatars) avatar request(s) "
          + "of this service, not one of each: "
          + (accounts == 0 || avatars == 0
            ? "what it did not ask this service for came from somewhere else, such as a cache "
              + "kept across services, and a different service may answer differently"
            : askedAgain)),
      sourceLocation: sourceLocation)
  }

  @Test(
    "An account without an avatar gets a card with no avatar, not a screen that never loads",
    arguments: scripts)
  func loadsACardWithoutAvatar(script: CallbackScript) async throws {
    let service = Self.makeService(script: script)

    let card: ProfileCard
    do {
      card = try await withDeadline(.seconds(2), "loadProfileCard(id:from:)", hint: Self.hint) {
        try await loadProfileCard(id: Self.grace.id, from: service)
      }
    } catch is DeadlineExceeded {
      return
    } catch {
      Issue.record(
        """
        no avatar uploaded is not an error: the (nil, nil) reply must give a card whose \
        avatar is nil, but loadProfileCard(id:from:) threw \(error)
        """)
      return
    }

    #expect(card.name == "Grace")
    #expect(
      card.avatar == nil,
      "no avatar uploaded means nil, not a placeholder image: the screen shows initials")
    expectOneRequestEach(
      service,
      askedAgain: "the avatar server's (nil, nil) reply is its final answer, \"this user never "
        + "uploaded an avatar\", not \"try later\": asking once more doubles the wait and the "
        + "load for every user without an avatar, and gets the same answer")
  }

  @Test("An unknown account throws the service's error without asking for an avatar")
  func unknownAccountThrows() async throws {
    let service = Self.makeService(script: .default)

    await #expect(throws: AccountServiceError.unknownAccount) {
      try await withDeadline(.seconds(2), "loadProfileCard(id:from:)", hint: Self.hint) {
        try await loadProfileCard(id: 404, from: service)
      }
    }
    #expect(service.avatarRequests == 0)
  }

  @Test("An avatar that fails to send throws the service's error", arguments: scripts)
  func brokenAvatarThrows(script: CallbackScript) async throws {
    let service = Self.makeService(script: script)

    await #expect(
      throws: AccountServiceError.avatarUnavailable,
      "the avatar server's own error must reach the caller unchanged: not a card without avatar, nor another error in its place"
    ) {
      try await withDeadline(.seconds(2), "loadProfileCard(id:from:)", hint: Self.hint) {
        try await loadProfileCard(id: Self.linus.id, from: service)
      }
    }
    expectOneRequestEach(service)
  }

  @Test("The same service loads a card without an avatar, then one with an avatar")
  func reuse() async throws {
    let service = Self.makeService(script: .default)

    let first = try await withDeadline(.seconds(2), "loadProfileCard(id:from:)", hint: Self.hint) {
      try await loadProfileCard(id: Self.grace.id, from: service)
    }
    let second = try await withDeadline(
      .seconds(2), "a second loadProfileCard(id:from:)", hint: Self.hint
    ) {
      try await loadProfileCard(id: Self.ada.id, from: service)
    }

    #expect(first == ProfileCard(name: "Grace", avatar: nil))
    #expect(second == ProfileCard(name: "Ada", avatar: Self.portrait))
    let requests = (service.accountRequests, service.avatarRequests)
    #expect(
      requests == (2, 2),
      Comment(
        rawValue: "two cards, one without an avatar and one with, took \(requests.0) account "
          + "request(s) and \(requests.1) avatar request(s), not two of each: "
          + (requests.0 > 2 || requests.1 > 2
            ? "a card asked the service more than once; each reply, (nil, nil) included, is "
              + "the service's answer, passed on as it came"
            : "each card asks the service, and nothing is kept from one call to the next")))
  }

  @Test("Waiting for a slow avatar server suspends instead of holding a thread")
  func slowAvatarDoesNotBlock() async throws {
    // The avatar server answers after 2.5 s: long enough that a thread held while waiting
    // for it (a semaphore, a group's wait) is noticed by the deadline's pool check.
    let service = Self.makeService(script: .later(.milliseconds(2500)))

    let card = try await withDeadline(
      .seconds(10), "loadProfileCard(id:from:)",
      hint: """
        the avatar helper holds a thread of the concurrency pool while it waits for the \
        server; a helper that waits must suspend on a continuation, so the thread can run \
        other tasks (a service that answers on the waiting thread would never answer)
        """
    ) {
      try await loadProfileCard(id: Self.ada.id, from: service)
    }

    #expect(
      card == ProfileCard(name: "Ada", avatar: Self.portrait),
      Comment(
        rawValue: card.avatar == nil
          ? "the card came without the avatar the server sent 2.5 s later: the wait gave up "
            + "before the answer (a blocking wait with a timeout?); suspend on a continuation "
            + "until the server answers, however long it takes"
          : "the card is \(card), not Ada's with her portrait"))
  }

  @Test("An avatar of zero bytes is an avatar: the card has it, empty")
  func emptyAvatarIsAnAvatar() async throws {
    let service = AccountService(accounts: [Self.ada], avatars: [Self.ada.avatarKey: Data()])

    let card = try await withDeadline(.seconds(2), "loadProfileCard(id:from:)", hint: Self.hint) {
      try await loadProfileCard(id: Self.ada.id, from: service)
    }

    #expect(
      card == ProfileCard(name: "Ada", avatar: Data()),
      Comment(
        rawValue: "the service sent Ada's avatar, zero bytes long, and the card is \(card): "
          + "only a nil image means no avatar; what the service sent, however short, is "
          + "passed on as it came"))
  }

  @Test("An avatar key is the service's to read: an empty one is asked for like any other")
  func emptyKeyIsAsked() async throws {
    let blank = AccountRecord(id: 5, displayName: "Blank", avatarKey: "")
    let service = AccountService(accounts: [blank], avatars: ["": Self.portrait])

    let card = try await withDeadline(.seconds(2), "loadProfileCard(id:from:)", hint: Self.hint) {
      try await loadProfileCard(id: blank.id, from: service)
    }

    #expect(
      card == ProfileCard(name: "Blank", avatar: Self.portrait),
      Comment(
        rawValue: "the account's avatar key is \"\" and the service has an avatar under it, "
          + "yet the card is \(card) after \(service.avatarRequests) avatar request(s): a key, "
          + "even an empty one, is passed to the service as it is; only the service's answer "
          + "says whether there is an avatar"))
  }

  @Test("The same card loaded twice from one service asks the service twice")
  func sameCardTwiceAsksTwice() async throws {
    let service = Self.makeService(script: .default)

    var cards: [ProfileCard] = []
    for call in ["loadProfileCard(id:from:)", "a second loadProfileCard(id:from:) of that card"] {
      cards.append(
        try await withDeadline(.seconds(2), call, hint: Self.hint) {
          try await loadProfileCard(id: Self.ada.id, from: service)
        })
    }

    #expect(cards == Array(repeating: ProfileCard(name: "Ada", avatar: Self.portrait), count: 2))
    let requests = (service.accountRequests, service.avatarRequests)
    #expect(
      requests == (2, 2),
      Comment(
        rawValue: "loading Ada's card twice from one service took \(requests.0) account "
          + "request(s) and \(requests.1) avatar request(s), not two of each: the second card "
          + "was not asked for, but kept from the first call; the account or the avatar may "
          + "have changed since, and a kept card hides that. Each call asks the service"))
  }

  @Test("An id one service does not know is asked of the next service all the same")
  func unknownIdIsAskedAgain() async throws {
    // Kept to this test: no other test asks for this id.
    let hopper = AccountRecord(id: 4_711, displayName: "Grace Hopper", avatarKey: "avatars/gh")
    let without = AccountService(accounts: [Self.ada], avatars: [:])
    let with = AccountService(accounts: [hopper], avatars: [hopper.avatarKey: Self.portrait])

    await #expect(throws: AccountServiceError.unknownAccount) {
      try await withDeadline(.seconds(2), "loadProfileCard(id:from:)", hint: Self.hint) {
        try await loadProfileCard(id: hopper.id, from: without)
      }
    }
    let card: ProfileCard
    do {
      card = try await withDeadline(
        .seconds(2), "loadProfileCard(id:from:) on a service that knows the id", hint: Self.hint
      ) {
        try await loadProfileCard(id: hopper.id, from: with)
      }
    } catch is DeadlineExceeded {
      return
    } catch {
      Issue.record(
        Comment(
          rawValue: "account \(hopper.id) is unknown to one service, and a second service "
            + "knows it, but loading it from the second threw \(error) after "
            + "\(with.accountRequests) account request(s) of that service: an answer from "
            + "another service, or from an earlier call, was used in place of asking this one. "
            + "Accounts come and go, and services differ; each call asks the service it was "
            + "given"))
      return
    }

    #expect(card == ProfileCard(name: "Grace Hopper", avatar: Self.portrait))
    #expect(
      (with.accountRequests, with.avatarRequests) == (1, 1),
      "the card of a service that knows the account takes one account request and one avatar request of that service"
    )
  }

  @Test("A task cancelled while its card loads gets the whole card, or CancellationError")
  func cancelledTaskGetsTheCardOrThrows() async throws {
    let service = Self.makeService(script: .later(.milliseconds(50)))

    // Cancelled before it starts, so that it is cancelled whenever the function looks:
    // before the account, between the account and the avatar, or after the avatar.
    let outcome = try await withDeadline(.seconds(2), "loadProfileCard(id:from:)", hint: Self.hint)
    {
      await Task {
        withUnsafeCurrentTask { $0?.cancel() }
        return try await loadProfileCard(id: Self.ada.id, from: service)
      }.result
    }

    switch outcome {
    case .success(let card):
      #expect(
        card == ProfileCard(name: "Ada", avatar: Self.portrait),
        Comment(
          rawValue: "a cancelled task got the card \(card), and Ada has an avatar: a card "
            + "with no avatar says \"this user never uploaded one\", and the screen shows "
            + "initials for a user who has a picture. Giving up on a cancelled task is "
            + "allowed, but it must show as an error (CancellationError), not as a card "
            + "that looks complete"))
    case .failure(let error):
      #expect(
        error is CancellationError,
        "a cancelled task threw \(error); giving up on cancellation throws CancellationError")
    }
  }
}
