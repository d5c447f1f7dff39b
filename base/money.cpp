#include "base/money.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

namespace vto {
namespace {

using Wide = __int128;

// a / b rounded half away from zero, saturated into Usd's range.
Usd dividedRounded(Wide a, Wide b) {
  bool negative = (a < 0) != (b < 0);
  Wide absA = a < 0 ? -a : a, absB = b < 0 ? -b : b;
  Wide quotient = (absA + absB / 2) / absB;
  if (quotient > Usd::max().micros()) return negative ? Usd() - Usd::max() : Usd::max();
  auto micros = static_cast<int64_t>(quotient);
  return Usd::micros(negative ? -micros : micros);
}

}  // namespace

std::optional<Usd> Usd::fromDollars(double dollars) {
  if (!std::isfinite(dollars)) return std::nullopt;
  double micros = std::round(dollars * kMicrosPerDollar);
  // 2^63 is exactly representable; anything at or past kMax is out of range.
  if (std::fabs(micros) >= 9.2e18) return std::nullopt;
  return Usd::micros(static_cast<int64_t>(micros));
}

std::optional<Usd> Usd::parse(std::string_view text) {
  if (text.empty() || text.size() > 13) return std::nullopt;
  int64_t whole = 0, cents = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] != '.'; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    whole = whole * 10 + (text[i] - '0');
  }
  if (i == 0) return std::nullopt;  // ".5"
  if (i < text.size()) {
    size_t decimals = text.size() - i - 1;
    if (decimals == 0 || decimals > 2) return std::nullopt;  // "5." or "5.123"
    for (size_t j = i + 1; j < text.size(); ++j) {
      if (text[j] < '0' || text[j] > '9') return std::nullopt;
      cents = cents * 10 + (text[j] - '0');
    }
    if (decimals == 1) cents *= 10;
  }
  if (whole > 1'000'000'000 || (whole == 1'000'000'000 && cents > 0)) return std::nullopt;
  return Usd::cents(whole * 100 + cents);
}

Usd Usd::roundedToCents() const { return dividedRounded(micros_, kMicrosPerDollar / 100) * (kMicrosPerDollar / 100); }

std::string Usd::plain(int decimals) const {
  decimals = std::clamp(decimals, 0, 6);
  int64_t unit = 1;
  for (int i = decimals; i < 6; ++i) unit *= 10;  // micro-dollars per printed digit
  int64_t scale = kMicrosPerDollar / unit;        // printed digits per dollar
  int64_t units = micros_ <= 0 ? 0 : dividedRounded(micros_, unit).micros_;
  std::string text = std::to_string(units / scale);
  if (decimals > 0) {
    std::string fraction = std::to_string(units % scale);
    text += '.';  // appended piece by piece: g++ 12 warns falsely (-Wrestrict) on `"." + std::string(...)`
    text.append(static_cast<size_t>(decimals) - fraction.size(), '0');
    text += fraction;
  }
  return text;
}

std::string Usd::display() const {
  bool negative = micros_ < 0;
  Usd magnitude = negative ? Usd() - *this : *this;
  std::string plainText = magnitude.plain();
  auto dot = plainText.find('.');
  std::string whole = plainText.substr(0, dot);
  std::string grouped;
  for (size_t i = 0; i < whole.size(); ++i) {
    if (i > 0 && (whole.size() - i) % 3 == 0) grouped += ',';
    grouped += whole[i];
  }
  std::string cents = plainText.substr(dot);
  if (cents == ".00") cents.clear();
  bool shownNegative = negative && (grouped != "0" || !cents.empty());
  return std::string(shownNegative ? "-" : "") + "$" + grouped + cents;
}

Usd Usd::forDuration(std::chrono::nanoseconds running) const {
  if (running <= std::chrono::nanoseconds::zero()) return Usd();
  constexpr Wide kNanosPerHour = Wide(3600) * 1'000'000'000;
  Wide product = Wide(micros_) * Wide(running.count());  // < 2^63 * 2^63: fits in 127 bits
  return dividedRounded(product, kNanosPerHour);
}

std::optional<std::chrono::seconds> Usd::timeToSpend(Usd amount) const {
  if (micros_ <= 0) return std::nullopt;
  if (amount.micros_ <= 0) return std::chrono::seconds(0);
  Wide seconds = Wide(amount.micros_) * 3600 / micros_;
  if (seconds > INT64_MAX) return std::chrono::seconds(INT64_MAX);
  return std::chrono::seconds(static_cast<int64_t>(seconds));
}

std::ostream& operator<<(std::ostream& out, Usd usd) { return out << usd.display(); }

}  // namespace vto
