// Every x coordinate an SVG chart (daemon/svg_chart.h) draws at: circle cx, line x1/x2, text x,
// each polyline point's x and each path's M/L x. For tests that every mark stays on the chart.
#pragma once

#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace iodrift::daemon::testing {

inline std::vector<double> SvgXCoordinates(const std::string& svg) {
  std::vector<double> xs;
  static const std::regex attr(R"re(\s(?:cx|x1|x2|x)="([-+0-9.eE]+)")re");
  for (std::sregex_iterator it(svg.begin(), svg.end(), attr), end; it != end; ++it) {
    xs.push_back(std::stod((*it)[1].str()));
  }
  static const std::regex points(R"re(points="([^"]*)")re");
  for (std::sregex_iterator it(svg.begin(), svg.end(), points), end; it != end; ++it) {
    std::istringstream in((*it)[1].str());
    for (std::string pair; in >> pair;) xs.push_back(std::stod(pair.substr(0, pair.find(','))));
  }
  static const std::regex path(R"re(d="([^"]*)")re");
  static const std::regex move(R"re([ML]([-+0-9.eE]+) )re");
  for (std::sregex_iterator it(svg.begin(), svg.end(), path), end; it != end; ++it) {
    const std::string d = (*it)[1].str();
    for (std::sregex_iterator m(d.begin(), d.end(), move), mend; m != mend; ++m) {
      xs.push_back(std::stod((*m)[1].str()));
    }
  }
  return xs;
}

// The cx of every data point of series `css_class`, in document order.
inline std::vector<double> SvgSeriesCx(const std::string& svg, const std::string& css_class) {
  std::vector<double> xs;
  const auto start = svg.find("<g class=\"series " + css_class + "\"");
  if (start == std::string::npos) return xs;
  const auto end = svg.find("</g>", start);
  const std::string group = svg.substr(start, end - start);
  static const std::regex cx(R"re(cx="([-+0-9.eE]+)")re");
  for (std::sregex_iterator it(group.begin(), group.end(), cx), e; it != e; ++it) {
    xs.push_back(std::stod((*it)[1].str()));
  }
  return xs;
}

}  // namespace iodrift::daemon::testing
