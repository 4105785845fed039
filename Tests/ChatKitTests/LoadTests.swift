import ChatKit
import Testing
import WorkbookTesting

@Suite("ChatServer under load")
struct LoadTests {
  // Under Thread Sanitizer (`make tsan`) 30 clients send 33 lines each: 28,710 deliveries
  // instead of 990,000, which the sanitizer could not finish within the minute allowed. The
  // code paths and interleavings it checks are the same with 30 clients as with 100.
  static let clients = underThreadSanitizer ? 30 : 100
  static let linesEach = underThreadSanitizer ? 33 : 100

  @Test(
    "100 clients each send 100 lines (30 × 33 under TSan): every other client receives each exactly once, in order"
  )
  func hundredByHundred() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let clock = ContinuousClock()
    let start = clock.now

    let members = try await withThrowingTaskGroup(of: Member.self) { group in
      for index in 0..<Self.clients {
        group.addTask { try await join(server, as: "c\(index)") }
      }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    // Every connect has been welcomed, so every client is in the server's list and will
    // receive every line sent from now on.
    #expect(server.names.count == Self.clients)
    let joined = clock.now

    for member in members {
      for number in 0..<Self.linesEach { member.connection.send("\(number)") }
    }
    let expected = (Self.clients - 1) * Self.linesEach
    let delivered = await eventually(
      "every client to receive \(expected) lines", within: .seconds(60)
    ) {
      members.allSatisfy { $0.recorder.messageCount.value >= expected }
    }
    let finished = clock.now
    print(
      "load: \(Self.clients) clients joined in \(joined - start); "
        + "\(Self.clients * expected) deliveries in \(finished - joined)")
    guard delivered else { return }

    let numbers = (0..<Self.linesEach).map(String.init)
    let allNumbers = "0...\(Self.linesEach - 1)"
    for member in members {
      var bySender: [String: [String]] = [:]
      for line in member.recorder.messages {
        let parts = line.split(separator: ":", maxSplits: 1)
        bySender[String(parts[0]), default: []].append(String(parts[1].dropFirst()))
      }
      #expect(bySender[member.name] == nil, "\(member.name) received its own lines")
      #expect(bySender.count == Self.clients - 1)
      for (sender, received) in bySender where received != numbers {
        Issue.record(
          "\(member.name) received from \(sender): \(received.count) lines, not \(allNumbers) once in order"
        )
      }
    }
    for member in members { member.connection.disconnect() }
  }
}
