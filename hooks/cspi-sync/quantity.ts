// Kubernetes resource quantities in the API server's canonical form. The API server stores "1000m" as "1",
// "2048Mi" as "2Gi" and 0.5 as "500m"; a Deployment that asks for the other spelling never equals what
// Metacontroller observes, so every sync would update it again. Same rules as apimachinery's
// resource.Quantity: values are rounded up to nano units; binary suffixes stay binary when the value is a
// whole number of at least 1024, everything else is written in decimal SI with the largest exact suffix.

const QUANTITY = /^([+-]?)([0-9]+\.?[0-9]*|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$/;

const DECIMAL_EXPONENT: Record<string, number> = { n: -9, u: -6, m: -3, "": 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_POWER: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
const DECIMAL_SUFFIX = new Map(Object.entries(DECIMAL_EXPONENT).map(([suffix, exp]) => [exp, suffix]));
const BINARY_SUFFIX = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

const NANO = 10n ** 9n;
/** Kubernetes reads resource values as int64 base units; beyond that no real resource lives. */
const MAX_NANO = (2n ** 63n - 1n) * NANO;

type Format = "DecimalSI" | "BinarySI" | "DecimalExponent";

/** The canonical spelling of a quantity, or undefined when the value is not a valid non-negative quantity. */
export function canonicalQuantity(value: string | number): string | undefined {
  const text = typeof value === "number" ? (Number.isFinite(value) ? String(value) : "") : value.trim();
  const match = QUANTITY.exec(text);
  if (!match) return undefined;
  const [, sign, number, suffix = ""] = match as unknown as [string, string, string, string | undefined];
  const [whole = "", fraction = ""] = number.split(".");
  const digits = BigInt(`${whole}${fraction}` || "0");

  let format: Format;
  let tenPower = -fraction.length;
  let binaryPower = 0;
  if (suffix in BINARY_POWER) {
    format = "BinarySI";
    binaryPower = BINARY_POWER[suffix]!;
  } else if (suffix.length > 1) {
    format = "DecimalExponent";
    tenPower += Number(suffix.slice(1));
  } else {
    format = "DecimalSI";
    tenPower += DECIMAL_EXPONENT[suffix]!;
  }

  const nano = toNano(digits * 1024n ** BigInt(binaryPower), tenPower);
  if (nano === 0n) return "0";
  if (sign === "-" || nano > MAX_NANO) return undefined;

  if (format === "BinarySI" && nano >= 1024n * NANO && nano % NANO === 0n) {
    let amount = nano / NANO;
    let power = 0;
    while (amount % 1024n === 0n && power < BINARY_SUFFIX.length - 1) {
      amount /= 1024n;
      power++;
    }
    return `${amount}${BINARY_SUFFIX[power]}`;
  }
  return decimal(nano, format === "DecimalExponent");
}

/** digits × 10^tenPower in nano units, rounded up as apimachinery rounds sub-nano precision. */
function toNano(digits: bigint, tenPower: number): bigint {
  const shift = tenPower + 9;
  if (shift >= 0) return digits * 10n ** BigInt(shift);
  const divisor = 10n ** BigInt(-shift);
  return (digits + divisor - 1n) / divisor;
}

/** Largest exponent that is a multiple of 3 and keeps the mantissa whole: 1500m, 1, 1500M, 2e6. */
function decimal(nano: bigint, exponentForm: boolean): string {
  let amount = nano;
  let exponent = -9;
  while (amount % 10n === 0n) {
    amount /= 10n;
    exponent++;
  }
  const rest = ((exponent % 3) + 3) % 3;
  amount *= 10n ** BigInt(rest);
  exponent -= rest;
  if (exponentForm) return exponent === 0 ? `${amount}` : `${amount}e${exponent}`;
  return `${amount}${DECIMAL_SUFFIX.get(exponent)}`;
}
