import Foundation

/// The learner-facing text of a check: a header per chapter, one line per exercise with
/// its details indented under it, then a summary with a progress bar and the next step.
public struct TextRenderer: Sendable {
  public var terminal: Terminal
  public var barWidth = 20
  /// The workbook's root, for the links of file paths (see ``Terminal/linkingPaths(in:root:)``).
  public var root: URL?

  public init(terminal: Terminal, root: URL? = nil) {
    self.terminal = terminal
    self.root = root
  }

  public func render(_ report: CheckReport, moreChapters: String? = nil) -> String {
    var lines: [String] = []
    for chapter in report.chapters {
      lines.append(contentsOf: render(chapter))
      lines.append("")
    }
    lines.append(contentsOf: summary(report, moreChapters: moreChapters))
    let text = lines.joined(separator: "\n")
    return root.map { terminal.linkingPaths(in: text, root: $0) } ?? text
  }

  public func render(_ chapter: ChapterReport) -> [String] {
    var lines = [terminal.paint("Chapter \(chapter.number) · \(chapter.title)", .bold)]
    for note in chapter.notes { lines.append("    " + note) }
    let idWidth = chapter.exercises.map(\.id.count).max() ?? 0
    let nameWidth = chapter.exercises.map(\.displayName.count).max() ?? 0
    for exercise in chapter.exercises {
      let id = exercise.id.padding(toLength: idWidth, withPad: " ", startingAt: 0)
      let name = exercise.displayName.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
      let verdict = exercise.verdict
      lines.append(
        "  \(terminal.paint(verdict.symbol, for: verdict)) \(id)  \(name)  "
          + terminal.paint(verdict.rawValue, for: verdict))
      for detail in exercise.details { lines.append("      " + detail) }
      for note in exercise.notes {
        lines.append(
          "      " + terminal.paint(note.rendered, note.type.isCaution ? .yellow : .green))
      }
      if let hint = exercise.hint {
        lines.append("      " + terminal.paint("hint: \(hint)", .cyan))
      }
    }
    return lines
  }

  public func summary(_ report: CheckReport, moreChapters: String? = nil) -> [String] {
    let totals = report.totals
    let filled = totals.checked == 0 ? 0 : totals.passed * barWidth / totals.checked
    let bar =
      terminal.paint(String(repeating: "█", count: filled), .green)
      + String(repeating: "░", count: barWidth - filled)
    var lines = [
      "Progress [\(bar)] \(totals.passed)/\(totals.checked) passed (\(totals.percent)%)"
    ]
    if let next = report.next {
      lines.append(
        "next: \(next.id) \(next.name) — edit \(next.file) — \(next.hint)")
    } else if let moreChapters {
      lines.append("next: \(moreChapters)")
    } else if totals.checked > 0 {
      lines.append("Everything checked passed (\(totals.passed) of \(totals.checked)).")
    }
    return lines
  }
}
