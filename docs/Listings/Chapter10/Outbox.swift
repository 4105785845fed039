// listing: legacy-groups SendingRisksDataRace
// listing: legacy
final class Draft {
  var lines: [String] = []
}

actor Outbox {
  private var queued: [Draft] = []

  func send(_ draft: Draft) {
    queued.append(draft)
  }
}

func submit(to outbox: Outbox) async {
  let draft = Draft()
  draft.lines.append("Hello")
  await outbox.send(draft)
  draft.lines.append("Sent.")  // the outbox's actor may be reading it right now
}
// listing: end
