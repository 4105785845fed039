// Chapter 7, exercise 7.2: a serial executor that runs each job on a dispatch queue.
import Dispatch

final class QueueExecutor: SerialExecutor {
  private let queue: DispatchQueue

  init(queue: DispatchQueue) {
    self.queue = queue
  }

  // listing: enqueue
  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
  }
  // listing: end
}
