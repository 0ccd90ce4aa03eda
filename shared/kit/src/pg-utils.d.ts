// node-postgres's own value conversion (pg/lib/utils.js), which @types/pg does not describe: the
// embedded mode binds parameters with it so both run modes send the database the same text.
declare module 'pg/lib/utils.js' {
  const utils: { prepareValue(value: unknown): null | string | Buffer };
  export default utils;
}
