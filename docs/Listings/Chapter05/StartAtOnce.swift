// Chapter 5, "Futures start at once": two futures made one after the other run side by side.
import CoroutineKit
import Foundation

struct Forecast: Sendable { var summary: String }
struct TrafficReport: Sendable { var delayMinutes: Int }

final class ForecastService: @unchecked Sendable {
  func forecast(for city: String) -> CoFuture<Forecast> {
    DispatchQueue.global().coroutineFuture { Forecast(summary: "sunny in \(city)") }
  }
}

final class RoadService: @unchecked Sendable {
  func report(for road: String) -> CoFuture<TrafficReport> {
    DispatchQueue.global().coroutineFuture { TrafficReport(delayMinutes: road.count) }
  }
}

func show(_ forecast: Forecast, _ traffic: TrafficReport) {
  print(forecast.summary, traffic.delayMinutes)
}

/// Runs inside a coroutine, where blocking on a future is allowed.
func planTrip(forecasts: ForecastService, roads: RoadService) throws {
  // listing: futures
  let weather = forecasts.forecast(for: "Porto")  // CoFuture: running from here
  let traffic = roads.report(for: "A1")  // running from here, too
  show(try weather.await(), try traffic.await())  // waits as long as the slower one
  // listing: end
}
