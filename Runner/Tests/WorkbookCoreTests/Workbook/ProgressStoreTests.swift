import Foundation
import Testing

@testable import WorkbookCore

@Suite struct ProgressStoreTests {
  @Test func startsAfreshQuietlyWhenTheFileIsMissing() throws {
    let root = try Fixtures.temporaryFolder()
    defer { try? FileManager.default.removeItem(at: root) }
    var notices: [String] = []
    let progress = ProgressStore(root: root).load { notices.append($0) }
    #expect(progress == Progress())
    #expect(notices.isEmpty)
  }

  @Test func startsAfreshWithANoticeWhenTheFileIsCorrupt() throws {
    let root = try Fixtures.temporaryFolder()
    defer { try? FileManager.default.removeItem(at: root) }
    let store = ProgressStore(root: root)
    try FileManager.default.createDirectory(
      at: store.url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try Data(#"{"exercises": {"1.1": {"hintsShown": "many"}}"#.utf8).write(to: store.url)
    var notices: [String] = []
    let progress = store.load { notices.append($0) }
    #expect(progress == Progress())
    #expect(
      notices == [
        "workbook: .workbook/progress.json was unreadable (not valid progress data); "
          + "starting a new one (earlier verdicts and hint counts are forgotten)"
      ])
    // …and the next save replaces the corrupt file.
    try store.save(progress)
    #expect(store.load { notices.append($0) } == Progress())
    #expect(notices.count == 1)
  }

  @Test func savesAtomicallyAndReadsBack() throws {
    let root = try Fixtures.temporaryFolder()
    defer { try? FileManager.default.removeItem(at: root) }
    let store = ProgressStore(root: root)
    var progress = Progress()
    progress["1.3"].verdict = .neverResumed
    progress["1.3"].hintsShown = 2
    try store.save(progress)
    progress["1.4"].verdict = .passed
    try store.save(progress)
    #expect(store.load { _ in Issue.record("no notice expected") } == progress)
    // Only the progress file is left: the temporary file was renamed over it.
    let files = try FileManager.default.contentsOfDirectory(
      atPath: store.url.deletingLastPathComponent().path)
    #expect(files == ["progress.json"])
  }

  @Test func reportsAFolderItCannotWrite() throws {
    let root = try Fixtures.temporaryFolder()
    defer { try? FileManager.default.removeItem(at: root) }
    // A file where the .workbook folder should be.
    try Data().write(to: root.appendingPathComponent(".workbook"))
    #expect(
      throws: WorkbookError.failure(
        "cannot write .workbook/progress.json: .workbook is a file, not a folder; "
          + "remove or rename it (rm .workbook)")
    ) { try ProgressStore(root: root).save(Progress()) }
  }

  @Test func reportsAProgressFileThatIsAFolder() throws {
    let root = try Fixtures.temporaryFolder()
    defer { try? FileManager.default.removeItem(at: root) }
    let store = ProgressStore(root: root)
    try FileManager.default.createDirectory(at: store.url, withIntermediateDirectories: true)
    let (progress, problem) = store.read()
    #expect(progress == Progress())
    #expect(
      problem
        == "workbook: .workbook/progress.json is a folder, not a file; starting from empty progress"
    )
    #expect(
      throws: WorkbookError.failure(
        "cannot write .workbook/progress.json: it is a folder, not a file; "
          + "remove it (rm -r .workbook/progress.json)")
    ) { try store.save(Progress()) }
    // Nothing half-written is left behind.
    #expect(try FileManager.default.contentsOfDirectory(atPath: store.url.path).isEmpty)
  }
}

@Suite struct HintsTests {
  let chapter = Chapter(
    number: 1, folder: "01-Callbacks", module: "Callbacks", title: "Callbacks",
    exercises: [
      Exercise(
        id: "1.3", name: "Optional pair", file: "03-OptionalPair.swift",
        suite: "OptionalPairTests", hints: ["gentle", "firmer", "explicit"])
    ])

  @Test func revealsHintsInOrderAndThenRepeatsTheLast() {
    var progress = Progress()
    let exercise = chapter.exercises[0]
    let texts = (1...4).map { _ in Hints.reveal(exercise, in: chapter, progress: &progress) }
    #expect(texts[0].hasPrefix("Hint 1 of 3 for 1.3 Optional pair:\n  gentle"))
    #expect(texts[0].hasSuffix("(make hint EXERCISE=1.3 again for the next one)"))
    #expect(texts[1].hasPrefix("Hint 2 of 3 for 1.3 Optional pair:\n  firmer"))
    #expect(
      texts[2]
        == "Hint 3 of 3 for 1.3 Optional pair:\n  explicit\n"
        + "That was the last hint. The solution is in Solutions/01-Callbacks/03-OptionalPair.swift."
    )
    #expect(
      texts[3].hasPrefix("All 3 hints for 1.3 Optional pair are shown. The last one:\n  explicit"))
    #expect(texts[3].contains("Solutions/01-Callbacks/03-OptionalPair.swift"))
    #expect(progress["1.3"].hintsShown == 3)
  }

  @Test func saysWhenThereAreNoHints() {
    var progress = Progress()
    var exercise = chapter.exercises[0]
    exercise.hints = []
    #expect(
      Hints.reveal(exercise, in: chapter, progress: &progress)
        == "1.3 Optional pair has no hints yet. The solution is in Solutions/01-Callbacks/03-OptionalPair.swift."
    )
  }
}

@Suite struct WatcherTests {
  @Test func noticesAddedChangedAndRemovedFiles() throws {
    let folder = try Fixtures.temporaryFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let chapter = folder.appendingPathComponent("01-Basics")
    try FileManager.default.createDirectory(at: chapter, withIntermediateDirectories: true)
    try Data("a".utf8).write(to: chapter.appendingPathComponent("01-A.swift"))
    try Data("b".utf8).write(to: chapter.appendingPathComponent("02-B.swift"))
    try Data("hidden".utf8).write(to: chapter.appendingPathComponent(".swp"))
    let watcher = Watcher(folder: folder)
    let before = watcher.snapshot()
    #expect(before.keys.sorted() == ["01-Basics/01-A.swift", "01-Basics/02-B.swift"])

    try Data("longer".utf8).write(to: chapter.appendingPathComponent("01-A.swift"))
    try FileManager.default.removeItem(at: chapter.appendingPathComponent("02-B.swift"))
    try Data("c".utf8).write(to: chapter.appendingPathComponent("03-C.swift"))
    #expect(
      Watcher.changes(from: before, to: watcher.snapshot()) == [
        "01-Basics/01-A.swift", "01-Basics/02-B.swift", "01-Basics/03-C.swift",
      ])
  }

  @Test func mapsAChangedPathToItsChapter() throws {
    let workbook = try MetadataLoader.load(
      root: Fixtures.folder.appendingPathComponent("MiniWorkbook"))
    #expect(Watcher.chapter(of: "02-Broken/01-Halving.swift", in: workbook)?.number == 2)
    #expect(Watcher.chapter(of: "99-Nope/x.swift", in: workbook) == nil)
  }

  @Test func regradesOnlyTheExercisesWhoseFilesChanged() throws {
    let workbook = try MetadataLoader.load(
      root: Fixtures.folder.appendingPathComponent("MiniWorkbook"))
    let chapter = try #require(workbook.chapter(number: 1))
    let second = "01-Basics/\(chapter.exercises[1].file)"
    #expect(Watcher.exercises(affectedBy: [second], in: chapter).map(\.id) == ["1.2"])
    // Another file of the chapter (a helper) may matter to any exercise.
    #expect(
      Watcher.exercises(affectedBy: [second, "01-Basics/Helpers.swift"], in: chapter).count
        == chapter.exercises.count)
  }
}
