/**
 * Money is a decimal string, never a float. Each ISO 4217 currency fixes its minor units
 * (JPY 0, USD 2, KWD 3); a price with more decimals than its currency allows is refused rather
 * than rounded, because silently changing an amount is worse than asking again.
 */
const ZERO_DECIMALS = 'BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF';
const THREE_DECIMALS = 'BHD IQD JOD KWD LYD OMR TND';
const FOUR_DECIMALS = 'CLF UYW';
const TWO_DECIMALS =
  'AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BOV BRL BSD BTN BWP BYN BZD CAD CDF CHE CHF CHW ' +
  'CNY COP COU CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GTQ GYD HKD HNL HTG HUF IDR ILS INR ' +
  'IRR JMD KES KGS KHR KPW KYD KZT LAK LBP LKR LRD LSL MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN ' +
  'NIO NOK NPR NZD PAB PEN PGK PHP PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB ' +
  'TJS TMT TOP TRY TTD TWD TZS UAH USD USN UYU UZS VES VED WST XCD XCG YER ZAR ZMW ZWG';

const MINOR_UNITS: ReadonlyMap<string, number> = new Map([
  ...ZERO_DECIMALS.split(' ').map((code) => [code, 0] as const),
  ...TWO_DECIMALS.split(' ').map((code) => [code, 2] as const),
  ...THREE_DECIMALS.split(' ').map((code) => [code, 3] as const),
  ...FOUR_DECIMALS.split(' ').map((code) => [code, 4] as const),
]);

export function minorUnitsOf(currency: string): number | undefined {
  return MINOR_UNITS.get(currency);
}

export function isCurrency(value: unknown): value is string {
  return typeof value === 'string' && MINOR_UNITS.has(value);
}

/** Largest amount we accept: 15 integer digits keeps every currency's minor units inside a bigint-safe range. */
const MAX_INTEGER_DIGITS = 15;
const DECIMAL = /^(0|[1-9]\d*)(?:\.(\d+))?$/;

export type PriceProblem = 'invalid_decimal' | 'too_many_decimals' | 'too_large';

/** Parses a decimal string into integer minor units, or says why it cannot. */
export function parseAmount(value: string, currency: string): { minor: bigint } | { problem: PriceProblem; allowedDecimals?: number } {
  const match = DECIMAL.exec(value);
  if (!match) return { problem: 'invalid_decimal' };
  const [, integer = '0', fraction = ''] = match;
  const decimals = minorUnitsOf(currency) ?? 2;
  if (fraction.length > decimals) return { problem: 'too_many_decimals', allowedDecimals: decimals };
  if (integer.length > MAX_INTEGER_DIGITS) return { problem: 'too_large' };
  return { minor: BigInt(integer + fraction.padEnd(decimals, '0')) };
}

/** Formats minor units with exactly the currency's decimals: 1999n USD → "19.99", 1500n JPY → "1500". */
export function formatAmount(minor: bigint, currency: string): string {
  const decimals = minorUnitsOf(currency) ?? 2;
  const digits = minor.toString().padStart(decimals + 1, '0');
  return decimals === 0 ? digits : `${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`;
}

/** A stored NUMERIC's text that needs no parsing to re-express: no leading zeros, at most MAX_INTEGER_DIGITS. */
const PLAIN_DECIMAL = /^(?:0|[1-9]\d{0,14})(?:\.\d+)?$/;
const ZEROS = /^0*$/;

/**
 * Re-expresses a stored NUMERIC ("19.9900") with the currency's exact decimals ("19.99"). Every
 * product read goes through here, so the usual text (digits past the currency's decimals all
 * zeros) is cut or padded as text; the rest is parsed, and refused when not exact.
 */
export function canonicalPrice(numeric: string, currency: string): string {
  if (PLAIN_DECIMAL.test(numeric)) {
    const decimals = minorUnitsOf(currency) ?? 2;
    const point = numeric.indexOf('.');
    const integer = point < 0 ? numeric : numeric.slice(0, point);
    const fraction = point < 0 ? '' : numeric.slice(point + 1);
    if (fraction.length <= decimals) return decimals === 0 ? integer : `${integer}.${fraction.padEnd(decimals, '0')}`;
    if (ZEROS.test(fraction.slice(decimals))) return decimals === 0 ? integer : `${integer}.${fraction.slice(0, decimals)}`;
  }
  return parsedCanonicalPrice(numeric, currency);
}

function parsedCanonicalPrice(numeric: string, currency: string): string {
  const trimmed = numeric.includes('.') ? numeric.replace(/0+$/, '').replace(/\.$/, '') : numeric;
  const parsed = parseAmount(trimmed, currency);
  if ('problem' in parsed) throw new Error(`stored price ${numeric} is not exact in ${currency}`);
  return formatAmount(parsed.minor, currency);
}
