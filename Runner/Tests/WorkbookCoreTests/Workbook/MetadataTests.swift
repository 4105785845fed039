import Foundation
import Testing

@testable import WorkbookCore

@Suite struct MetadataTests {
  static let minimal = """
    {"format": 1, "chapters": [{"number": 1, "folder": "01-Callbacks", "module": "Callbacks",
      "title": "Callbacks to async", "exercises": [{"id": "1.1", "name": "Warm-up",
      "file": "01-WarmUp.swift", "suite": "WarmUpTests", "starterVerdict": "not started",
      "starterDigest": "", "hints": ["a", "b"]}]}]}
    """

  @Test func decodesChaptersAndExercises() throws {
    let workbook = try MetadataLoader.decode(Data(Self.minimal.utf8))
    let chapter = try #require(workbook.chapter(number: 1))
    let exercise = try #require(workbook.exercise(id: "1.1"))
    #expect(chapter.testModule == "CallbacksTests")
    #expect(chapter.starterPath(exercise) == "Chapters/01-Callbacks/01-WarmUp.swift")
    #expect(chapter.solutionPath(exercise) == "Solutions/01-Callbacks/01-WarmUp.swift")
    #expect(chapter.testPath(exercise) == "Tests/01-CallbacksTests/01-WarmUpTests.swift")
    #expect(chapter.filter(for: exercise) == #"^CallbacksTests\.WarmUpTests(/|$)"#)
    #expect(workbook.chapter(containing: exercise)?.number == 1)
  }

  @Test func decodesTheRealWorkbookJSON() throws {
    let root = Fixtures.folder.deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    let workbook = try MetadataLoader.load(root: root)
    #expect(workbook.chapters.first?.module == "Callbacks")
  }

  @Test func namesTheMissingKey() {
    let text = Self.minimal.replacingOccurrences(of: #""suite": "WarmUpTests","#, with: "")
    #expect(throws: WorkbookError.self) { try MetadataLoader.decode(Data(text.utf8)) }
    do {
      _ = try MetadataLoader.decode(Data(text.utf8))
    } catch {
      #expect(error.description.contains(#"missing key "suite""#))
      #expect(error.description.contains("chapters[0].exercises[0]"))
    }
  }

  @Test func saysWhenTheFileIsNotJSON() {
    do {
      _ = try MetadataLoader.decode(Data("{ nope".utf8))
      Issue.record("decoding should fail")
    } catch {
      #expect(error.description.hasPrefix("workbook.json is not valid: not JSON"))
    }
  }

  @Test func reportsAMissingFile() throws {
    let folder = try Fixtures.temporaryFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    #expect(throws: WorkbookError.metadata("cannot read workbook.json in \(folder.path)")) {
      try MetadataLoader.load(root: folder)
    }
  }

  @Test func readsTheChapterListOfPackageSwiftAsText() {
    let manifest = """
      let chapters: [(folder: String, module: String)] = [
        ("01-Callbacks", "Callbacks"),
        ("02-Delegates", "Delegates"),
      ]
      let other = [("x", "y")]
      """
    let pairs = MetadataValidator.packageChapters(manifest)
    #expect(pairs.map(\.folder) == ["01-Callbacks", "02-Delegates"])
    #expect(pairs.map(\.module) == ["Callbacks", "Delegates"])
  }

  @Test func readsChapterEntriesThatAlsoListTheModulesTheyUse() {
    let manifest = """
      let chapters: [(folder: String, module: String, uses: [String])] = [
        ("01-Callbacks", "Callbacks", ["LegacyKit"]),
        ("05-Futures", "Futures", ["CoroutineKit", "LegacyKit"]),
      ]
      """
    let pairs = MetadataValidator.packageChapters(manifest)
    #expect(pairs.map(\.folder) == ["01-Callbacks", "05-Futures"])
    #expect(pairs.map(\.module) == ["Callbacks", "Futures"])
  }

  @Test func flagsChaptersThatDisagreeWithPackageSwift() throws {
    let workbook = try MetadataLoader.decode(Data(Self.minimal.utf8))
    let manifest = #"let chapters: [(folder: String, module: String)] = [("01-Other", "Other")]"#
    let result = MetadataValidator.validateChapters(workbook, manifest: manifest)
    #expect(!result.passed)
    #expect(result.problems.first?.contains("01-Other/Other") == true)
  }

  @Test func flagsDuplicateSuitesAndIDs() throws {
    var workbook = try MetadataLoader.decode(Data(Self.minimal.utf8))
    workbook.chapters[0].exercises.append(workbook.chapters[0].exercises[0])
    let manifest =
      #"let chapters: [(folder: String, module: String)] = [("01-Callbacks", "Callbacks")]"#
    let problems = MetadataValidator.validateChapters(workbook, manifest: manifest).problems
    #expect(problems.contains("exercise id 1.1 is used more than once"))
    #expect(problems.contains("suite name WarmUpTests is used more than once"))
  }

  @Test func flagsUsesThatNameNoEarlierExerciseOfTheChapter() throws {
    var workbook = try MetadataLoader.decode(Data(Self.minimal.utf8))
    var second = workbook.chapters[0].exercises[0]
    second.id = "1.2"
    second.suite = "SecondTests"
    second.uses = ["1.1"]
    workbook.chapters[0].exercises[0].uses = ["1.2", "9.9"]
    workbook.chapters[0].exercises.append(second)
    let manifest =
      #"let chapters: [(folder: String, module: String)] = [("01-Callbacks", "Callbacks")]"#
    let problems = MetadataValidator.validateChapters(workbook, manifest: manifest).problems
    #expect(
      problems.contains("exercise 1.1: uses 1.2, which is not an earlier exercise of chapter 1"))
    #expect(
      problems.contains("exercise 1.1: uses 9.9, which is not an earlier exercise of chapter 1"))
    #expect(!problems.contains { $0.hasPrefix("exercise 1.2:") })
  }

  @Test func flagsNotesThatAreUnprovenMisnamedOrOutOfScope() throws {
    var workbook = try MetadataLoader.decode(Data(Self.minimal.utf8))
    let manifest =
      #"let chapters: [(folder: String, module: String)] = [("01-Callbacks", "Callbacks")]"#
    workbook.notes = [
      NoteRule(
        id: "detached", type: .actionable, constructs: ["Task.detached"], message: "why",
        exercises: ["1.*"]),
      NoteRule(id: "empty", type: .informative, message: " ", exercises: ["9.9", "2.*"]),
      NoteRule(
        id: "detached", type: .celebratory, constructs: ["x"], message: "y", exercises: []),
    ]
    workbook.chapters[0].exercises[0].alternatives = [
      Alternative(name: "proves it", source: "Alternatives/a.swift", notes: ["detached"]),
      Alternative(name: "names none", source: "Alternatives/b.swift", notes: ["missing"]),
    ]
    let problems = MetadataValidator.validateChapters(workbook, manifest: manifest).problems
    #expect(problems.contains("note id detached is used more than once"))
    #expect(problems.contains("note empty: has no message"))
    #expect(problems.contains("note empty: needs `constructs` or a `detector`"))
    #expect(
      problems.contains(#"note empty: "9.9" is not an exercise id, a chapter ("3.*") or "*""#))
    #expect(
      problems.contains(#"note empty: "2.*" is not an exercise id, a chapter ("3.*") or "*""#))
    #expect(problems.contains { $0.hasPrefix("note empty: no alternative names it") })
    #expect(problems.contains("note detached: applies to no exercise (`exercises` is empty)"))
    #expect(!problems.contains { $0.hasPrefix("note detached: no alternative names it") })
    #expect(
      problems.contains {
        $0.hasPrefix(#"1.1 alternative "names none": names the note "missing""#)
      })
    workbook.notes = [
      NoteRule(
        id: "detached", type: .actionable, constructs: ["Task.detached"], message: "why",
        exercises: ["*"], except: ["1.1"])
    ]
    workbook.chapters[0].exercises[0].alternatives.removeLast()
    #expect(
      MetadataValidator.validateChapters(workbook, manifest: manifest).problems == [
        #"1.1 alternative "proves it": names the note "detached", which does not apply to 1.1"#
      ])
  }

  @Test func flagsMissingFilesFewHintsAndBadVerdicts() throws {
    let folder = try Fixtures.temporaryFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let workbook = try MetadataLoader.decode(Data(Self.minimal.utf8))
    var exercise = workbook.exercises[0]
    exercise.hints = ["only one"]
    exercise.starterVerdict = "exploded"
    exercise.id = "2.1"
    let result = MetadataValidator.validate(exercise, in: workbook.chapters[0], root: folder)
    #expect(
      result.problems == [
        "starter file Chapters/01-Callbacks/01-WarmUp.swift is missing",
        "solution file Solutions/01-Callbacks/01-WarmUp.swift is missing",
        "test file Tests/01-CallbacksTests/01-WarmUpTests.swift is missing",
        "has 1 hint(s); needs at least 2",
        #"starterVerdict "exploded" is not one of "passed", "not started", "failed", "never resumed", "crashed", "does not compile""#,
        "id 2.1 does not start with its chapter number 1",
      ])
  }

  @Test(arguments: ["MiniWorkbook", "VariantWorkbook"])
  func acceptsTheFixtureWorkbook(_ name: String) throws {
    let root = Fixtures.folder.appendingPathComponent(name)
    let workbook = try MetadataLoader.load(root: root)
    let manifest = try String(
      contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
    #expect(MetadataValidator.validateChapters(workbook, manifest: manifest).problems == [])
    for chapter in workbook.chapters {
      for exercise in chapter.exercises {
        #expect(MetadataValidator.validate(exercise, in: chapter, root: root).problems == [])
      }
    }
  }

  // MARK: mistakes and alternatives

  static let variantsJSON = """
    {"format": 1, "catalogue": {"minimumMistakes": 2},
     "chapters": [{"number": 1, "folder": "01-Callbacks", "module": "Callbacks",
      "title": "Callbacks to async", "unknownKey": true, "exercises": [{"id": "1.1",
      "name": "Warm-up", "file": "01-WarmUp.swift", "suite": "WarmUpTests",
      "starterVerdict": "not started", "starterDigest": "", "hints": ["a", "b"],
      "mistakes": [{"name": "forgets the error", "source": "Mistakes/01-Callbacks/1.1-a.patch",
        "verdict": "never resumed", "phrase": "never resumes"}],
      "alternatives": [{"name": "a switch", "source": "Alternatives/01-Callbacks/1.1-b.swift"}]
    }]}]}
    """

  @Test func decodesMistakesAlternativesAndTheCatalogue() throws {
    let workbook = try MetadataLoader.decode(Data(Self.variantsJSON.utf8))
    let exercise = try #require(workbook.exercise(id: "1.1"))
    #expect(
      exercise.mistakes == [
        Mistake(
          name: "forgets the error", source: "Mistakes/01-Callbacks/1.1-a.patch",
          verdict: "never resumed", phrase: "never resumes")
      ])
    #expect(
      exercise.alternatives == [
        Alternative(name: "a switch", source: "Alternatives/01-Callbacks/1.1-b.swift")
      ])
    #expect(workbook.catalogue == Catalogue(minimumMistakes: 2, minimumAlternatives: 1))
    // Both arrays and the catalogue are optional.
    let plain = try MetadataLoader.decode(Data(Self.minimal.utf8))
    #expect(plain.catalogue == nil)
    #expect(plain.exercises[0].mistakes.isEmpty && plain.exercises[0].alternatives.isEmpty)
  }

  /// A folder with the variant sources of `variantsJSON` and the exercise's own files.
  static func variantsRoot() throws -> (URL, Workbook) {
    let folder = try Fixtures.temporaryFolder()
    for path in [
      "Chapters/01-Callbacks/01-WarmUp.swift", "Solutions/01-Callbacks/01-WarmUp.swift",
      "Tests/01-CallbacksTests/01-WarmUpTests.swift", "Mistakes/01-Callbacks/1.1-a.patch",
      "Alternatives/01-Callbacks/1.1-b.swift", "Mistakes/01-Callbacks/1.1-c.txt",
      "Alternatives/01-Callbacks/1.1-d.swift",
    ] {
      let url = folder.appendingPathComponent(path)
      try FileManager.default.createDirectory(
        at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
      try Data("x\n".utf8).write(to: url)
    }
    return (folder, try MetadataLoader.decode(Data(Self.variantsJSON.utf8)))
  }

  @Test func validMistakesAndAlternativesPass() throws {
    let (root, workbook) = try Self.variantsRoot()
    defer { try? FileManager.default.removeItem(at: root) }
    var exercise = workbook.exercises[0]
    exercise.mistakes.append(exercise.mistakes[0])
    exercise.mistakes[1].name = "another"
    let problems = MetadataValidator.validate(
      exercise, in: workbook.chapters[0], root: root, catalogue: workbook.catalogue
    ).problems
    #expect(problems == [])
  }

  @Test func eachRuleForMistakesAndAlternativesFailsWhenBroken() throws {
    let (root, workbook) = try Self.variantsRoot()
    defer { try? FileManager.default.removeItem(at: root) }
    let chapter = workbook.chapters[0]
    let good = workbook.exercises[0]
    func problems(_ change: (inout Exercise) -> Void, catalogue: Catalogue? = nil) -> [String] {
      var exercise = good
      change(&exercise)
      return MetadataValidator.validate(exercise, in: chapter, root: root, catalogue: catalogue)
        .problems
    }
    #expect(
      problems { $0.mistakes[0].source = "Mistakes/01-Callbacks/1.1-gone.patch" } == [
        #"mistake "forgets the error": source Mistakes/01-Callbacks/1.1-gone.patch is missing"#
      ])
    #expect(
      problems { $0.mistakes[0].source = "Mistakes/01-Callbacks/1.1-c.txt" } == [
        #"mistake "forgets the error": source Mistakes/01-Callbacks/1.1-c.txt is neither a .swift nor a .patch file"#
      ])
    #expect(
      problems { $0.mistakes[0].source = "Alternatives/01-Callbacks/1.1-d.swift" } == [
        #"mistake "forgets the error": source Alternatives/01-Callbacks/1.1-d.swift is not under Mistakes/"#
      ])
    #expect(
      problems { $0.alternatives[0].source = "Mistakes/01-Callbacks/1.1-a.patch" } == [
        #"alternative "a switch": source Mistakes/01-Callbacks/1.1-a.patch is not under Alternatives/"#
      ])
    #expect(
      problems { $0.mistakes[0].verdict = "passed" } == [
        #"mistake "forgets the error": verdict "passed" is not one of "failed", "never resumed", "crashed", "does not compile""#
      ])
    #expect(
      problems { $0.mistakes[0].phrase = "  " } == [
        #"mistake "forgets the error": phrase is empty; give words the verdict's message must contain"#
      ])
    #expect(
      problems { $0.alternatives[0].name = "forgets the error" } == [
        #"the mistake/alternative name "forgets the error" is used more than once"#
      ])
    #expect(problems { $0.mistakes[0].name = "" } == ["a mistake or alternative has an empty name"])
    // The minimums apply only with a catalogue.
    #expect(problems { $0.alternatives = [] } == [])
    #expect(
      problems({ $0.alternatives = [] }, catalogue: Catalogue())
        == [
          "has 1 mistake(s); needs at least 4", "has 0 alternative(s); needs at least 1",
        ])
  }
}
