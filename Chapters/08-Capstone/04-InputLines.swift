import Foundation

// The legacy way: a loop around a blocking read, on whatever thread runs it.
//
//     while let line = readLine() { handle(line) }
//
// A blocking read must not run on the shared pool (nor on a global Dispatch queue): it
// would hold one of its few threads for as long as the user does not type.

/// The lines read from `handle` (standard input, a pipe), as they arrive, without their
/// line endings; finishes at end of file.
func inputLines(from handle: FileHandle) -> AsyncStream<String> {
  // TODO: Yield each line as soon as its "\n" arrives (without a "\r" before it), then, at
  // end of file, a last unfinished line if there is one, and finish.
  AsyncStream { $0.finish() }
}
