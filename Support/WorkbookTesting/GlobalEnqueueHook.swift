import Foundation

/// Swift's hook for jobs sent to the global executor: the runtime calls it, on the thread
/// that sends the job, instead of queueing the job itself. Two helpers share it:
/// `withNewTasksRunningFirst` and `withPlainThreadJobsReordered`.
enum GlobalEnqueueHook {
  typealias Original = @convention(thin) (UnownedJob) -> Void
  typealias Hook = @convention(thin) (UnownedJob, Original) -> Void

  static let installed: Bool = {
    guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "swift_task_enqueueGlobal_hook") else {
      return false
    }
    let hook: Hook = { job, original in GlobalEnqueueHook.enqueue(job, original: original) }
    symbol.assumingMemoryBound(to: Hook?.self).pointee = hook
    return true
  }()

  static func installOnce() {
    precondition(installed, "this Swift runtime has no swift_task_enqueueGlobal_hook")
  }

  static func enqueue(_ job: UnownedJob, original: Original) {
    if runFirstIfAsked(job) { return }
    if ReorderedJobs.hold(job, original: original) { return }
    original(job)
  }
}
