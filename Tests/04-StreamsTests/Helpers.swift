import Testing

/// A test's explanation, for one too long to write as a single literal.
func because(_ explanation: String) -> Comment {
  Comment(rawValue: explanation)
}
