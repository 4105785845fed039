// Chapter 5, "async functions start when awaited", and exercise 5.3: async let asks for
// both at once.
struct Forecast: Sendable { var summary: String }
struct TrafficReport: Sendable { var delayMinutes: Int }

final class ForecastService: Sendable {
  func forecast(for city: String) async throws -> Forecast {
    try await Task.sleep(for: .milliseconds(30))
    return Forecast(summary: "sunny in \(city)")
  }
}

final class RoadService: Sendable {
  func report(for road: String) async throws -> TrafficReport {
    try await Task.sleep(for: .milliseconds(20))
    return TrafficReport(delayMinutes: road.count)
  }
}

func show(_ forecast: Forecast, _ traffic: TrafficReport) {
  print(forecast.summary, traffic.delayMinutes)
}

func planTripInTurn(forecasts: ForecastService, roads: RoadService) async throws {
  // listing: in-turn
  let weather = try await forecasts.forecast(for: "Porto")  // runs, and we wait
  let traffic = try await roads.report(for: "A1")  // only starts now
  // listing: end
  show(weather, traffic)
}

func planTrip(forecasts: ForecastService, roads: RoadService) async throws {
  async let weather = forecasts.forecast(for: "Porto")  // a child task, running from here
  async let traffic = roads.report(for: "A1")  // running from here, too
  show(try await weather, try await traffic)  // waits as long as the slower one
}
