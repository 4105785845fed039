// Chapter 2, exercise 2.3: a helper that returns a Result, one return per path, so the
// callback that calls it resumes exactly once. A thermostat's serial line, not the
// exercise's camera.

/// Why a line from the thermostat's serial port is not a temperature.
enum ReadingError: Error {
  case notAReading  // a prompt, a status line, noise
  case unreadableNumber
  case outOfRange(Double)
}

// listing: outcome
func reading(from line: String) -> Result<Double, ReadingError> {
  guard line.hasPrefix("T=") else { return .failure(.notAReading) }
  guard let celsius = Double(line.dropFirst(2)) else { return .failure(.unreadableNumber) }
  guard (-40...85).contains(celsius) else { return .failure(.outOfRange(celsius)) }
  return .success(celsius)
}
// listing: end
