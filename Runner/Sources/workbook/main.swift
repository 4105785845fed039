import Foundation
import WorkbookCore

// The grading runner's entry point; everything else lives in WorkbookCore.
let arguments = Array(CommandLine.arguments.dropFirst())
App.installInterruptHandlers(arguments: arguments)
exit(App.run(arguments))
