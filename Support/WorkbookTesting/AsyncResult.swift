extension Result where Failure == any Error {
  /// The outcome of an async throwing call, as a value: for tests that expect either a
  /// value or a particular error, such as a cancellation that may land before or after
  /// the work finished.
  public init(catching body: () async throws -> Success) async {
    do {
      self = .success(try await body())
    } catch {
      self = .failure(error)
    }
  }
}
