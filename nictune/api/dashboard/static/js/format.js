// The one number formatter: a port of nictune/formatting.py format_number, so the dashboard
// prints a value exactly as the CLI and the report do (tests/dashboard/format_cases.json holds
// the cases both are tested on).

/** |x| with `digits` decimals, a tie rounded to even on x's exact binary value, as Python does
 *  (toFixed rounds a tie up: 0.0625 would be "0.063" where Python prints "0.062"). */
function fixedHalfEven(abs, digits) {
  const near = abs.toFixed(digits);
  const exact = abs.toFixed(100);  // every decimal of a double this size: its exact value
  const dot = exact.indexOf(".");
  const rest = exact.slice(dot + 1 + digits);
  if (!/^50*$/.test(rest)) return near;
  const truncated = exact.slice(0, digits ? dot + 1 + digits : dot);
  return Number(truncated.at(-1)) % 2 === 0 ? truncated : near;
}

function groupThousands(digits) {
  return digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** Python's f"{abs:,.0f}". */
function wholeWithCommas(abs) {
  // Beyond 2**53 every double is a whole number: BigInt gives all its digits, as Python does.
  const digits = abs >= 2 ** 53 ? BigInt(abs).toString() : fixedHalfEven(abs, 0);
  return groupThousands(digits);
}

/** Python's f"{abs:.3g}" for 1e-4 <= abs < 0.01: three significant digits, fixed notation,
 *  trailing zeros dropped (0.0012, 0.00225, 0.01). */
function threeSignificant(abs) {
  const [mantissa, exp] = abs.toExponential(2).split("e");
  const e = Number(exp);
  const digits = mantissa.replace(".", "");
  const text = e >= 0 ? digits : `0.${"0".repeat(-e - 1)}${digits}`;
  return text.includes(".") ? text.replace(/0+$/, "").replace(/\.$/, "") : text;
}

/** Python's f"{abs:.2e}": two decimals, an exponent of at least two digits (3.48e-11, 9.99e-05). */
function exponent(abs) {
  return abs.toExponential(2).replace(/e([+-])(\d)$/, "e$10$2");
}

/**
 * A metric value with sensible precision: 39.6, 7.347, 15,625, 0.00225, 3.48e-11; "-" when missing.
 * @param {number|null|undefined} value
 * @returns {string}
 */
export function formatNumber(value) {
  if (value === null || value === undefined || value === "" || (typeof value === "number" && Number.isNaN(value))) return "-";
  if (typeof value !== "number") return String(value);
  if (!Number.isFinite(value)) return value > 0 ? "inf" : "-inf";
  if (value === 0) return "0";
  const sign = value < 0 ? "-" : "";
  const mag = Math.abs(value);
  if (mag >= 1000) return sign + wholeWithCommas(mag);
  if (mag >= 10) return sign + fixedHalfEven(mag, 1);
  if (mag >= 0.01) return sign + fixedHalfEven(mag, 3);
  if (mag >= 1e-4) return sign + threeSignificant(mag);
  return sign + exponent(mag);
}

/** Python's f"{x:.{d}g}": d significant digits, fixed notation for exponents -4 .. d-1 (trailing
 *  zeros dropped), else scientific with a two-digit exponent (1e-07). */
function generalFormat(x, d) {
  if (x === 0) return "0";
  const sign = x < 0 ? "-" : "";
  const abs = Math.abs(x);
  const exp = Number(abs.toExponential(d - 1).split("e")[1]);  // the exponent after rounding
  if (exp >= -4 && exp < d) {
    const text = fixedHalfEven(abs, Math.max(0, d - 1 - exp));
    return sign + (text.includes(".") ? text.replace(/0+$/, "").replace(/\.$/, "") : text);
  }
  const [mantissa, e] = abs.toExponential(d - 1).split("e");
  const m = mantissa.includes(".") ? mantissa.replace(/0+$/, "").replace(/\.$/, "") : mantissa;
  const n = Number(e);
  return `${sign}${m}e${n < 0 ? "-" : "+"}${String(Math.abs(n)).padStart(2, "0")}`;
}

/** nictune/formatting.py _significant: whole numbers with commas from 10**(digits-1) on. */
function significant(x, digits) {
  if (Number.isFinite(x) && Math.abs(x) >= 10 ** (digits - 1)) {
    return (x < 0 ? "-" : "") + wholeWithCommas(Math.abs(x));
  }
  return generalFormat(x, digits);
}

/**
 * A mean and the half width of its interval, as the CLI prints it: "39.48 ± 1.3", "3,166 ± 130"
 * (a port of nictune/formatting.py format_interval).
 * @param {number} mean
 * @param {number} half
 * @returns {string}
 */
export function formatInterval(mean, half) {
  return `${significant(mean, 4)} ± ${significant(half, 2)}`;
}
