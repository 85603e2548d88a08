// Container resource quantities as the API server stores them. It stores "1000m" as "1", "2048Mi" as "2Gi",
// 0.5 as "500m" and rounds resource lists up to milli units ("100n" as "1m"); a Deployment that asks for
// another spelling never equals what Metacontroller observes, so every sync would update it again. Same
// rules as apimachinery's resource.Quantity (canonical form) after SetDefaults_ResourceList (milli round-up):
// binary suffixes stay binary when the value is a whole number of at least 1024, everything else is written
// in decimal SI with the largest exact suffix. The output is a fixed point: the server stores it unchanged.

const QUANTITY = /^([+-]?)([0-9]+\.?[0-9]*|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$/;

const DECIMAL_EXPONENT: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  "": 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const BINARY_POWER: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
const DECIMAL_SUFFIX = new Map(Object.entries(DECIMAL_EXPONENT).map(([suffix, exp]) => [exp, suffix]));
const BINARY_SUFFIX = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

const NANO = 10n ** 9n;
const MILLI_IN_NANO = 10n ** 6n;
/** Kubernetes reads resource values as int64 base units; beyond that no real resource lives. */
const MAX_NANO = (2n ** 63n - 1n) * NANO;

type Format = "DecimalSI" | "BinarySI" | "DecimalExponent";

export interface Quantity {
  /** The value in nano units, rounded up to whole milli units as the API server rounds resource lists. */
  nano: bigint;
  /** The API server's spelling of the value. */
  canonical: string;
}

/** A non-negative quantity in canonical form, or undefined when the API server would not accept it. */
export function parseQuantity(value: string | number): Quantity | undefined {
  const text = typeof value === "number" ? (Number.isFinite(value) ? String(value) : "") : value.trim();
  const match = QUANTITY.exec(text);
  if (!match) return undefined;
  // Groups 1 and 2 always take part in a match; the suffix (3) is undefined when absent.
  const [, sign, number, suffix = ""] = match;
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
    tenPower += DECIMAL_EXPONENT[suffix];
  }

  const exact = toNano(digits * 1024n ** BigInt(binaryPower), tenPower);
  const nano = ((exact + MILLI_IN_NANO - 1n) / MILLI_IN_NANO) * MILLI_IN_NANO;
  if (nano === 0n) return { nano, canonical: "0" };
  if (sign === "-" || nano > MAX_NANO) return undefined;
  return {
    nano,
    canonical:
      format === "BinarySI" && isWholeAtLeast1024(nano)
        ? binary(nano)
        : decimal(nano, format === "DecimalExponent"),
  };
}

function isWholeAtLeast1024(nano: bigint): boolean {
  return nano >= 1024n * NANO && nano % NANO === 0n;
}

/** Whole units with the largest binary suffix that divides them: 2Gi, 1536Mi, 1025Ki. */
function binary(nano: bigint): string {
  let amount = nano / NANO;
  let power = 0;
  while (amount % 1024n === 0n && power < BINARY_SUFFIX.length - 1) {
    amount /= 1024n;
    power++;
  }
  return `${amount}${BINARY_SUFFIX[power]}`;
}

/** digits × 10^tenPower in nano units, rounded up (the milli round-up follows). */
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

/** Whole bytes of a quantity, or undefined when it is not one. */
export function quantityBytes(value: unknown): bigint | undefined {
  if (typeof value !== "string" && typeof value !== "number") return undefined;
  const parsed = parseQuantity(value);
  return parsed === undefined ? undefined : parsed.nano / 1_000_000_000n;
}
