// Chapter 1, exercise 1.5: an async twin beside the callback API, in an extension, with the
// same base name. The thermometer is the one from "The idea".
// listing: compile-with Thermometer.swift

// listing: twin
extension Thermometer {
  func readTemperature() async -> Double {
    await withCheckedContinuation { continuation in
      readTemperature { celsius in  // the trailing closure picks the callback method
        continuation.resume(returning: celsius)
      }
    }
  }
}
// listing: end

func report(from thermometer: Thermometer) async {
  // listing: both
  thermometer.readTemperature { celsius in print("old call site:", celsius) }
  let celsius = await thermometer.readTemperature()  // new call site
  // listing: end
  print("new call site:", celsius)
}
