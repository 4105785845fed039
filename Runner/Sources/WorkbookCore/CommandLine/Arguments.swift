import Foundation

/// A parsed command line.
public struct Invocation: Equatable, Sendable {
  public enum Command: String, Equatable, Sendable, CaseIterable {
    case check, hint, reset, watch, status, verify, mistakes, fingerprint, help, mutate
  }

  public var command: Command
  /// `--root DIR`; the current directory when absent.
  public var root: String?
  public var chapter: Int?
  public var exercise: String?
  public var json = false
  /// `check --format diagnostics`: one compiler-style line per finding (see
  /// ``DiagnosticLinesFormat``).
  public var diagnosticLines = false
  public var timeout: Double = 30
  public var jobs = 2
  /// `mistakes --repeat N`: runs of each variant's suite on one build.
  public var repeats = 1
  /// `mistakes --only TEXT`: the variants whose name contains it.
  public var only: String?
  /// `hint ID --all`: every hint shown so far, without revealing the next.
  public var allHints = false
  /// `mutate --limit N`: at most N mutants per exercise.
  public var limit: Int?
  /// `mutate --write-report`: rewrite Mistakes/MUTATION.md for the graded exercises.
  public var writeReport = false
  /// `mutate --survivors`: grade again only the survivors the report leaves unexplained.
  public var survivorsOnly = false

  public init(command: Command) { self.command = command }
}

/// Hand-rolled argument parsing: `workbook <command> [options]`. Errors are usage errors
/// (exit status 2) whose message says what was wrong and what is valid.
public enum ArgumentParser {
  public static let usage = """
    usage: workbook <command> [options]

    commands:
      check [--chapter N | --exercise ID] [--json | --format text|json|diagnostics]
                         grade exercises (all chapters by default); diagnostics prints
                         one compiler-style line per finding, for editors
      hint ID [--all]    show the next hint for an exercise, e.g. workbook hint 1.3;
                         --all shows again every hint revealed so far
      reset ID           put an exercise's file back as shipped, e.g. workbook reset 1.3;
                         your version is kept first under .workbook/backups/
      watch [--chapter N]
                         re-grade when a file under Chapters/ changes (Ctrl-C stops)
      status [--chapter N]
                         each exercise's last verdict, without grading; exit status 0
                         only when every one passed at its last check
      verify [--chapter N]
                         developer check: metadata, solutions pass, starters fail as expected,
                         then the mistakes and alternatives (as `mistakes` does)
      mistakes [--chapter N | --exercise ID] [--only TEXT] [--repeat N]
                         each mistake in workbook.json gets its verdict and phrase, each
                         alternative passes (applied to a copy of Solutions/); --only picks
                         the variants whose name contains TEXT, --repeat runs each N times
      mutate [--chapter N | --exercise ID] [--limit N] [--survivors] [--write-report]
                         grade mutants of the solutions (statements deleted, comparisons
                         and booleans flipped): each must fail the tests or be explained
                         in Mistakes/MUTATION.md; --write-report rewrites it; --survivors
                         grades again only its unexplained survivors (all of an exercise
                         whose solution changed since)
      fingerprint        rewrite the starterDigest values in workbook.json
      help               show this text

    options:
      --root DIR         the workbook's root folder (default: the current directory)
      --timeout SECONDS  time limit for each exercise's test process (default: 30)
      --jobs N           exercise processes run at once (default: 2)
    """

  /// Options each command accepts (besides --root).
  static let accepted: [Invocation.Command: Set<String>] = [
    .check: ["--chapter", "--exercise", "--json", "--format", "--timeout", "--jobs"],
    .hint: ["--exercise", "--all"],
    .reset: ["--exercise"],
    .watch: ["--chapter", "--timeout", "--jobs"],
    .status: ["--chapter"],
    .verify: ["--chapter", "--timeout", "--jobs"],
    .mistakes: ["--chapter", "--exercise", "--timeout", "--jobs", "--only", "--repeat"],
    .fingerprint: [],
    .help: [],
    .mutate: [
      "--chapter", "--exercise", "--timeout", "--jobs", "--limit", "--survivors", "--write-report",
    ],
  ]

  /// Parses the arguments after the program name.
  public static func parse(_ arguments: [String]) throws(WorkbookError) -> Invocation {
    var remaining = arguments[...]
    var root: String?
    // --root may come before the command, too.
    while let first = remaining.first, first.hasPrefix("--root") {
      remaining = remaining.dropFirst()
      root = try value(for: "--root", inline: first, from: &remaining)
    }
    guard let name = remaining.popFirst() else {
      throw .usage("workbook: no command given\n\n\(usage)")
    }
    if name == "-h" || name == "--help" { return Invocation(command: .help) }
    guard let command = Invocation.Command(rawValue: name) else {
      let commands = Invocation.Command.allCases.map(\.rawValue).joined(separator: ", ")
      throw .usage("workbook: unknown command '\(name)'; the commands are: \(commands)")
    }
    var invocation = Invocation(command: command)
    invocation.root = root
    let allowed = accepted[command, default: []].union(["--root"])

    while let argument = remaining.popFirst() {
      if argument == "-h" || argument == "--help" { return Invocation(command: .help) }
      guard argument.hasPrefix("--") else {
        if command == .hint || command == .reset, invocation.exercise == nil {
          invocation.exercise = argument
          continue
        }
        throw .usage("workbook \(command.rawValue): unexpected argument '\(argument)'")
      }
      let option = String(argument.split(separator: "=", maxSplits: 1)[0])
      guard allowed.contains(option) else {
        let valid = allowed.sorted().joined(separator: ", ")
        throw .usage(
          "workbook \(command.rawValue): unknown option '\(option)'; it accepts: \(valid)")
      }
      switch option {
      case "--root":
        invocation.root = try value(for: option, inline: argument, from: &remaining)
      case "--chapter":
        let text = try value(for: option, inline: argument, from: &remaining)
        guard let number = Int(text) else {
          throw .usage(chapterError(text))
        }
        invocation.chapter = number
      case "--exercise":
        invocation.exercise = try value(for: option, inline: argument, from: &remaining)
      case "--json":
        invocation.json = true
      case "--format":
        let text = try value(for: option, inline: argument, from: &remaining)
        switch text {
        case "text": invocation.json = false
        case "json": invocation.json = true
        case "diagnostics": invocation.diagnosticLines = true
        default:
          throw .usage(
            "workbook: --format expects text, json or diagnostics; got '\(text)'")
        }
      case "--timeout":
        let text = try value(for: option, inline: argument, from: &remaining)
        guard let seconds = Double(text), seconds > 0 else {
          throw .usage("workbook: --timeout expects a number of seconds above 0; got '\(text)'")
        }
        invocation.timeout = seconds
      case "--jobs":
        let text = try value(for: option, inline: argument, from: &remaining)
        guard let jobs = Int(text), jobs >= 1 else {
          throw .usage("workbook: --jobs expects a whole number of at least 1; got '\(text)'")
        }
        invocation.jobs = jobs
      case "--repeat":
        let text = try value(for: option, inline: argument, from: &remaining)
        guard let repeats = Int(text), repeats >= 1 else {
          throw .usage("workbook: --repeat expects a whole number of at least 1; got '\(text)'")
        }
        invocation.repeats = repeats
      case "--only":
        invocation.only = try value(for: option, inline: argument, from: &remaining)
      case "--all":
        invocation.allHints = true
      case "--limit":
        let text = try value(for: option, inline: argument, from: &remaining)
        guard let limit = Int(text), limit >= 1 else {
          throw .usage("workbook: --limit expects a whole number of at least 1; got '\(text)'")
        }
        invocation.limit = limit
      case "--write-report":
        invocation.writeReport = true
      case "--survivors":
        invocation.survivorsOnly = true
      default:
        break
      }
    }
    if invocation.chapter != nil, invocation.exercise != nil {
      throw .usage(
        viaMake
          ? "make \(command.rawValue): give CHAPTER or EXERCISE, not both"
          : "workbook \(command.rawValue): give --chapter or --exercise, not both")
    }
    if command == .hint, invocation.exercise == nil {
      throw .usage("workbook hint: which exercise? e.g. workbook hint 1.3 (make hint EXERCISE=1.3)")
    }
    return invocation
  }

  /// True when make called the runner (the Makefile sets `WORKBOOK_MAKE`): messages then
  /// name make's variables, which is what the learner typed.
  static var viaMake: Bool { ProcessInfo.processInfo.environment["WORKBOOK_MAKE"] != nil }

  /// What to say about `--chapter TEXT` that is not a chapter number; an exercise id gets
  /// the option (or make variable) for one exercise.
  static func chapterError(_ text: String, viaMake: Bool = viaMake) -> String {
    let looksLikeExercise =
      text.contains(".")
      && text.split(separator: ".").allSatisfy {
        Int($0) != nil
      }
    if viaMake {
      return "make: CHAPTER takes a chapter number, e.g. make check CHAPTER=1; got '\(text)'"
        + (looksLikeExercise ? ". For one exercise, use EXERCISE: make check EXERCISE=\(text)" : "")
    }
    return "workbook: --chapter expects a chapter number, e.g. --chapter 1; got '\(text)'"
      + (looksLikeExercise ? ". For one exercise, use --exercise \(text)" : "")
  }

  /// The value of `--option VALUE` or `--option=VALUE`.
  private static func value(
    for option: String, inline argument: String, from remaining: inout ArraySlice<String>
  ) throws(WorkbookError) -> String {
    if let equals = argument.firstIndex(of: "=") {
      let value = String(argument[argument.index(after: equals)...])
      guard !value.isEmpty else { throw .usage("workbook: \(option) needs a value") }
      return value
    }
    guard let value = remaining.popFirst(), !value.hasPrefix("--") else {
      throw .usage("workbook: \(option) needs a value")
    }
    return value
  }
}
