import Foundation
import Testing

@testable import WorkbookCore

/// How `mistakes` lays a chapter's variants out in rounds: every variant once, each
/// exercise's in its order, and never an exercise in the same round as one it uses.
struct RoundPlanTests {
  static func exercise(_ id: String, uses: [String] = []) -> Exercise {
    Exercise(id: id, name: id, file: "\(id).swift", suite: "S\(id)", uses: uses)
  }

  static func queue(_ exercise: Exercise, _ count: Int) -> [MistakeChecker.Prepared] {
    (0..<count).map { index in
      MistakeChecker.Prepared(
        variant: Variant(
          kind: .mistake, name: "\(exercise.id)-\(index)", source: "", expected: .failed,
          phrase: nil, exerciseID: exercise.id),
        exercise: exercise, path: "", content: Data())
    }
  }

  @Test("Unrelated exercises share rounds: as many rounds as the longest list")
  func unrelatedShare() {
    let exercises = [Self.exercise("1.1"), Self.exercise("1.2"), Self.exercise("1.3")]
    let queues = zip(exercises, [3, 5, 2]).map { Self.queue($0, $1) }
    let rounds = MistakeChecker.rounds(exercises, queues)
    #expect(rounds.count == 5)
    #expect(rounds.first?.count == 3)
  }

  @Test("An exercise never shares a round with one it uses, or one that uses it")
  func relatedApart() {
    let exercises = [
      Self.exercise("8.1"), Self.exercise("8.2"), Self.exercise("8.5", uses: ["8.1", "8.2"]),
      Self.exercise("8.6", uses: ["8.1"]),
    ]
    let queues = zip(exercises, [2, 3, 4, 1]).map { Self.queue($0, $1) }
    let rounds = MistakeChecker.rounds(exercises, queues)
    for round in rounds {
      let ids = Set(round.map(\.exercise.id))
      #expect(!(ids.contains("8.5") && (ids.contains("8.1") || ids.contains("8.2"))), "\(ids)")
      #expect(!(ids.contains("8.6") && ids.contains("8.1")), "\(ids)")
    }
    // 8.5's four and 8.2's three can never overlap.
    #expect(rounds.count == 7)
    // Every variant exactly once, each exercise's in order.
    let placed = rounds.flatMap { $0 }.map(\.variant.name)
    #expect(placed.count == 10)
    for exercise in exercises {
      let own = placed.filter { $0.hasPrefix(exercise.id + "-") }
      #expect(own == own.sorted())
    }
  }
}
