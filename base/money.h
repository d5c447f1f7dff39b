#pragma once
// Money: US dollars as a whole number of micro-dollars, never a double summed over a month. Parsed
// and printed here only. Arithmetic saturates at Usd::max() (and at -Usd::max()), far above any
// budget (tenancy refuses a monthlyUsd above $1e12), so an absurd figure fails a budget check closed
// instead of wrapping round and opening it; a double that is not finite or out of range is refused
// where it is read (Usd::fromDollars).
#include <chrono>
#include <compare>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

namespace vto {

class Usd {
 public:
  static constexpr int64_t kMicrosPerDollar = 1'000'000;

  constexpr Usd() = default;
  static constexpr Usd micros(int64_t micros) { return Usd(clampMicros(micros)); }
  static constexpr Usd dollars(int64_t dollars) { return micros(mulMicros(dollars, kMicrosPerDollar)); }
  static constexpr Usd cents(int64_t cents) { return micros(mulMicros(cents, kMicrosPerDollar / 100)); }
  // The saturation point: about $9.2 trillion.
  static constexpr Usd max() { return Usd(kMax); }

  // From a double read from a file (a price, a budget): rounded to the micro-dollar; nullopt when not
  // finite or beyond max().
  static std::optional<Usd> fromDollars(double dollars);
  // "41.27", "250", "0.5": dollars with at most 2 decimals, 0 or more, at most $1,000,000,000 (the
  // wire format of spec.maxCostUsd, spec.budget.monthlyUsd and every status figure); nullopt otherwise.
  static std::optional<Usd> parse(std::string_view text);

  constexpr int64_t micros() const { return micros_; }
  // For metrics and ratios only: never summed back into money.
  double toDouble() const { return static_cast<double>(micros_) / kMicrosPerDollar; }
  bool saturated() const { return micros_ == kMax || micros_ == -kMax; }

  // Rounded to the cent, half away from zero: every figure status, Events and `vto cost` show.
  Usd roundedToCents() const;
  // "41.27": 2 decimals, as status writes them (negative amounts print as 0.00: status holds none);
  // `decimals` (0 to 6) for prices per hour ("0.2185").
  std::string plain(int decimals = 2) const;
  // "$4,980.12" ("$5,000" for whole dollars), "-$3.20": for messages people read. Any value prints.
  std::string display() const;

  // What running at this price per hour for `running` comes to (negative durations: nothing).
  Usd forDuration(std::chrono::nanoseconds running) const;
  // How long it takes to spend `amount` at this price per hour, rounded down to whole seconds
  // (nullopt when this price is 0 or less).
  std::optional<std::chrono::seconds> timeToSpend(Usd amount) const;

  friend constexpr Usd operator+(Usd a, Usd b) { return Usd(addMicros(a.micros_, b.micros_)); }
  friend constexpr Usd operator-(Usd a, Usd b) { return Usd(addMicros(a.micros_, -b.micros_)); }
  friend constexpr Usd operator*(Usd a, int64_t n) { return Usd(mulMicros(a.micros_, n)); }
  Usd& operator+=(Usd other) { return *this = *this + other; }
  Usd& operator-=(Usd other) { return *this = *this - other; }
  friend constexpr auto operator<=>(Usd, Usd) = default;
  friend constexpr bool operator==(Usd, Usd) = default;

 private:
  static constexpr int64_t kMax = INT64_MAX - 1;  // symmetric: -kMax is representable
  constexpr explicit Usd(int64_t micros) : micros_(micros) {}
  static constexpr int64_t clampMicros(int64_t v) { return v > kMax ? kMax : v < -kMax ? -kMax : v; }
  static constexpr int64_t addMicros(int64_t a, int64_t b) {
    int64_t sum = 0;
    if (__builtin_add_overflow(a, b, &sum)) return a > 0 ? kMax : -kMax;
    return clampMicros(sum);
  }
  static constexpr int64_t mulMicros(int64_t a, int64_t b) {
    int64_t product = 0;
    if (__builtin_mul_overflow(a, b, &product)) return (a > 0) == (b > 0) ? kMax : -kMax;
    return clampMicros(product);
  }
  int64_t micros_ = 0;
};

// "$4,980.12" (display()): test failures and logs.
std::ostream& operator<<(std::ostream& out, Usd usd);

inline Usd min(Usd a, Usd b) { return a < b ? a : b; }
inline Usd max(Usd a, Usd b) { return a < b ? b : a; }

}  // namespace vto
