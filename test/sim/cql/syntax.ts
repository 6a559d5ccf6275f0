/**
 * The CQL the simulated Cassandra understands: a tokenizer, the schema statements of `cql/*.cql`
 * (CREATE TABLE, ALTER TABLE … ADD, DROP TABLE) and the statement shapes the store sends (INSERT,
 * UPDATE, DELETE, SELECT with `?` binds). Anything else is a `CqlUnsupportedError` naming the text:
 * the simulation must never silently ignore a statement it does not understand.
 */

export class CqlUnsupportedError extends Error {
  override name = 'CqlUnsupportedError';
  constructor(what: string, text: string) {
    super(`simulated Cassandra: ${what} in: ${text}`);
  }
}

type Tok =
  | { t: 'id'; v: string; quoted: boolean }
  | { t: 'num'; v: string }
  | { t: 'str'; v: string }
  | { t: 'bind' }
  | { t: 'p'; v: string };

const PUNCT2 = ['<=', '>=', '!='];
const PUNCT1 = '(),;=<>+-*.[]{}:';

export function tokenize(text: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '-' && text[i + 1] === '-') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === "'") {
      let v = '';
      i++;
      for (;;) {
        if (i >= text.length) throw new CqlUnsupportedError('unterminated string', text);
        if (text[i] === "'" && text[i + 1] === "'") {
          v += "'";
          i += 2;
        } else if (text[i] === "'") {
          i++;
          break;
        } else v += text[i++];
      }
      out.push({ t: 'str', v });
    } else if (c === '"') {
      const end = text.indexOf('"', i + 1);
      if (end < 0) throw new CqlUnsupportedError('unterminated quoted identifier', text);
      out.push({ t: 'id', v: text.slice(i + 1, end), quoted: true });
      i = end + 1;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i)) as RegExpExecArray;
      out.push({ t: 'id', v: m[0].toLowerCase(), quoted: false });
      i += m[0].length;
    } else if (/[0-9]/.test(c)) {
      const m = /^[0-9]+(\.[0-9]+)?/.exec(text.slice(i)) as RegExpExecArray;
      out.push({ t: 'num', v: m[0] });
      i += m[0].length;
    } else if (c === '?') {
      out.push({ t: 'bind' });
      i++;
    } else if (PUNCT2.includes(text.slice(i, i + 2))) {
      out.push({ t: 'p', v: text.slice(i, i + 2) });
      i += 2;
    } else if (PUNCT1.includes(c)) {
      out.push({ t: 'p', v: c });
      i++;
    } else {
      throw new CqlUnsupportedError(`unexpected character ${JSON.stringify(c)}`, text);
    }
  }
  return out;
}

/** A cursor over tokens with the small helpers a recursive-descent parser needs. */
class Cursor {
  i = 0;
  binds = 0;
  constructor(
    readonly toks: Tok[],
    readonly text: string,
  ) {}
  peek(k = 0): Tok | undefined {
    return this.toks[this.i + k];
  }
  done(): boolean {
    return (
      this.i >= this.toks.length ||
      (this.toks[this.i]?.t === 'p' && (this.toks[this.i] as { v: string }).v === ';')
    );
  }
  fail(what: string): never {
    throw new CqlUnsupportedError(what, this.text);
  }
  isKw(kw: string, k = 0): boolean {
    const t = this.peek(k);
    return t?.t === 'id' && !t.quoted && t.v === kw;
  }
  isP(p: string, k = 0): boolean {
    const t = this.peek(k);
    return t?.t === 'p' && t.v === p;
  }
  kw(kw: string): void {
    if (!this.isKw(kw)) this.fail(`expected ${kw.toUpperCase()} at token ${this.i}`);
    this.i++;
  }
  optKw(kw: string): boolean {
    if (!this.isKw(kw)) return false;
    this.i++;
    return true;
  }
  /** `IF NOT EXISTS` / `IF EXISTS` (the words after IF), when next. */
  optIf(...words: string[]): boolean {
    if (!this.isKw('if')) return false;
    this.i++;
    for (const w of words) this.kw(w);
    return true;
  }
  /** ASC or DESC (default ASC): whether descending. */
  direction(): boolean {
    if (this.optKw('desc')) return true;
    this.optKw('asc');
    return false;
  }
  p(p: string): void {
    if (!this.isP(p)) this.fail(`expected '${p}' at token ${this.i}`);
    this.i++;
  }
  optP(p: string): boolean {
    if (!this.isP(p)) return false;
    this.i++;
    return true;
  }
  ident(): string {
    const t = this.peek();
    if (t?.t !== 'id') this.fail(`expected an identifier at token ${this.i}`);
    this.i++;
    return t.v;
  }
  /** A table name; a keyspace-qualified name is refused (the simulation has one keyspace). */
  table(): string {
    const name = this.ident();
    if (this.isP('.')) this.fail(`keyspace-qualified table ${name}.…`);
    return name;
  }
}

// ---- schema ----

export type NativeType = 'bigint' | 'int' | 'text' | 'boolean' | 'timestamp' | 'counter' | 'double';

export type CqlType =
  | { kind: 'native'; name: NativeType }
  | { kind: 'list' | 'set'; element: CqlType; frozen: boolean }
  | { kind: 'map'; key: CqlType; value: CqlType; frozen: boolean };

export type ColumnRole = 'partition' | 'clustering' | 'static' | 'regular';

export interface Column {
  name: string;
  type: CqlType;
  role: ColumnRole;
  /** Clustering columns: descending order. */
  desc: boolean;
}

export interface TableSchema {
  name: string;
  columns: Map<string, Column>;
  partitionKey: string[];
  clustering: string[];
  /** `default_time_to_live` in seconds (0: none). */
  defaultTtl: number;
  /** A counter table (every regular column a counter). */
  counter: boolean;
}

export type Schema = Map<string, TableSchema>;

const NATIVE: Record<string, NativeType> = {
  bigint: 'bigint',
  int: 'int',
  text: 'text',
  varchar: 'text',
  boolean: 'boolean',
  timestamp: 'timestamp',
  counter: 'counter',
  double: 'double',
};

function parseType(c: Cursor, frozen = false): CqlType {
  const name = c.ident();
  if (name === 'frozen') {
    c.p('<');
    const inner = parseType(c, true);
    c.p('>');
    return inner;
  }
  if (name === 'list' || name === 'set') {
    c.p('<');
    const element = parseType(c, true);
    c.p('>');
    return { kind: name, element, frozen };
  }
  if (name === 'map') {
    c.p('<');
    const key = parseType(c, true);
    c.p(',');
    const value = parseType(c, true);
    c.p('>');
    return { kind: 'map', key, value, frozen };
  }
  const n = NATIVE[name];
  if (!n) c.fail(`column type ${name}`);
  return { kind: 'native', name: n };
}

/** A literal of a table option (`gc_grace_seconds = 864000`, `compaction = {...}`): skipped. */
function skipOptionValue(c: Cursor): string {
  const t = c.peek();
  if (t?.t === 'p' && t.v === '{') {
    let depth = 0;
    do {
      const x = c.peek();
      if (!x) c.fail('unterminated option map');
      if (x.t === 'p' && x.v === '{') depth++;
      if (x.t === 'p' && x.v === '}') depth--;
      c.i++;
    } while (depth > 0);
    return '';
  }
  if (t?.t === 'num' || t?.t === 'str' || t?.t === 'id') {
    c.i++;
    return t.v;
  }
  return c.fail('table option value');
}

function createTable(c: Cursor, schema: Schema): void {
  c.kw('table');
  const ifNotExists = c.optIf('not', 'exists');
  const name = c.table();
  const columns = new Map<string, Column>();
  let partitionKey: string[] = [];
  let clustering: string[] = [];
  c.p('(');
  for (;;) {
    if (c.isKw('primary')) {
      c.kw('primary');
      c.kw('key');
      c.p('(');
      if (c.optP('(')) {
        do partitionKey.push(c.ident());
        while (c.optP(','));
        c.p(')');
      } else {
        partitionKey = [c.ident()];
      }
      while (c.optP(',')) clustering.push(c.ident());
      c.p(')');
    } else {
      const col = c.ident();
      const type = parseType(c);
      let role: ColumnRole = 'regular';
      if (c.optKw('static')) role = 'static';
      if (c.optKw('primary')) {
        c.kw('key');
        partitionKey = [col];
      }
      columns.set(col, { name: col, type, role, desc: false });
    }
    if (c.optP(')')) break;
    c.p(',');
  }
  let defaultTtl = 0;
  if (c.optKw('with')) {
    do {
      if (c.optKw('clustering')) {
        c.kw('order');
        c.kw('by');
        c.p('(');
        do {
          const col = c.ident();
          const desc = c.direction();
          const def = columns.get(col);
          if (!def) c.fail(`clustering order on unknown column ${col}`);
          def.desc = desc;
        } while (c.optP(','));
        c.p(')');
      } else {
        const opt = c.ident();
        c.p('=');
        const v = skipOptionValue(c);
        if (opt === 'default_time_to_live') defaultTtl = Number(v);
      }
    } while (c.optKw('and'));
  }
  if (!c.done()) c.fail('trailing tokens after CREATE TABLE');
  if (partitionKey.length === 0) c.fail(`table ${name} has no primary key`);
  for (const k of partitionKey) {
    const col = columns.get(k);
    if (!col) c.fail(`primary key column ${k} not declared`);
    col.role = 'partition';
  }
  for (const k of clustering) {
    const col = columns.get(k);
    if (!col) c.fail(`clustering column ${k} not declared`);
    col.role = 'clustering';
  }
  clustering = clustering.filter((k) => k !== undefined);
  const regular = [...columns.values()].filter((col) => col.role === 'regular' || col.role === 'static');
  const counter = regular.some((col) => col.type.kind === 'native' && col.type.name === 'counter');
  if (counter && regular.some((col) => !(col.type.kind === 'native' && col.type.name === 'counter')))
    c.fail('a counter table with non-counter columns');
  if (schema.has(name)) {
    if (ifNotExists) return;
    c.fail(`table ${name} already exists`);
  }
  schema.set(name, { name, columns, partitionKey, clustering, defaultTtl, counter });
}

function alterTable(c: Cursor, schema: Schema): void {
  c.kw('table');
  const name = c.table();
  const table = schema.get(name);
  if (!table) c.fail(`ALTER of unknown table ${name}`);
  if (!c.optKw('add')) c.fail('ALTER TABLE other than ADD');
  const add = () => {
    const col = c.ident();
    const type = parseType(c);
    const role: ColumnRole = c.optKw('static') ? 'static' : 'regular';
    if (role === 'static' && table.clustering.length === 0)
      c.fail('a static column on a table without clustering');
    if (table.columns.has(col)) c.fail(`column ${col} already exists`);
    table.columns.set(col, { name: col, type, role, desc: false });
  };
  if (c.optP('(')) {
    do add();
    while (c.optP(','));
    c.p(')');
  } else add();
  if (!c.done()) c.fail('trailing tokens after ALTER TABLE');
}

function dropTable(c: Cursor, schema: Schema): void {
  c.kw('table');
  const ifExists = c.optIf('exists');
  const name = c.table();
  if (!schema.has(name) && !ifExists) c.fail(`DROP of unknown table ${name}`);
  schema.delete(name);
  if (!c.done()) c.fail('trailing tokens after DROP TABLE');
}

/** Splits a schema file into statements (`;`-terminated, comments dropped). */
export function splitStatements(text: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inStr = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string;
    if (!inStr && ch === '-' && text[i + 1] === '-') {
      while (i < text.length && text[i] !== '\n') i++;
      cur += '\n';
      continue;
    }
    if (ch === "'") inStr = !inStr;
    if (ch === ';' && !inStr) {
      if (cur.trim()) out.push(cur.trim());
      cur = '';
    } else cur += ch;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

/** Applies schema files in order (the migration runner's order) to a schema, which it returns. */
export function parseSchema(files: readonly string[], schema: Schema = new Map()): Schema {
  for (const file of files) {
    for (const text of splitStatements(file)) {
      const c = new Cursor(tokenize(text), text);
      if (c.optKw('create')) {
        if (!c.isKw('table')) c.fail('CREATE other than CREATE TABLE');
        createTable(c, schema);
      } else if (c.optKw('alter')) alterTable(c, schema);
      else if (c.optKw('drop')) {
        if (!c.isKw('table')) c.fail('DROP other than DROP TABLE');
        dropTable(c, schema);
      } else c.fail('schema statement');
    }
  }
  return schema;
}

// ---- statements ----

export type Term =
  | { k: 'bind'; i: number }
  | { k: 'lit'; v: unknown }
  | { k: 'null' }
  /** `toTimestamp(now())`: the coordinator's clock at apply. */
  | { k: 'now' }
  | { k: 'coll'; kind: 'list' | 'set' | 'map'; items: Term[]; keys?: Term[] };

export type Cmp = '=' | '<' | '<=' | '>' | '>=';

export type Restriction =
  | { k: 'eq'; col: string; term: Term }
  | { k: 'in'; col: string; terms: Term[] | Term }
  | { k: 'slice'; col: string; op: Exclude<Cmp, '='>; term: Term }
  | { k: 'tuple'; cols: string[]; op: Exclude<Cmp, '='>; terms: Term[] }
  | { k: 'token'; cols: string[]; op: Exclude<Cmp, '='>; term: Term };

export interface Using {
  timestamp?: Term;
  ttl?: Term;
}

export type Condition = { k: 'exists' } | { k: 'notExists' } | { k: 'eq'; col: string; term: Term };

export type Assignment =
  | { k: 'set'; col: string; term: Term }
  | { k: 'add' | 'sub'; col: string; term: Term }
  | { k: 'prepend'; col: string; term: Term }
  | { k: 'elem'; col: string; key: Term; term: Term };

export type Selector =
  | { k: 'col'; col: string; alias: string }
  | { k: 'writetime' | 'ttl'; col: string; alias: string }
  | { k: 'token'; cols: string[]; alias: string }
  | { k: 'star' };

export type Statement =
  | {
      kind: 'insert';
      table: string;
      cols: string[];
      values: Term[];
      using: Using;
      conditions: Condition[];
      binds: number;
      text: string;
    }
  | {
      kind: 'update';
      table: string;
      using: Using;
      assignments: Assignment[];
      where: Restriction[];
      conditions: Condition[];
      binds: number;
      text: string;
    }
  | {
      kind: 'delete';
      table: string;
      targets: { col: string; key?: Term }[];
      using: Using;
      where: Restriction[];
      conditions: Condition[];
      binds: number;
      text: string;
    }
  | {
      kind: 'select';
      table: string;
      distinct: boolean;
      selectors: Selector[];
      where: Restriction[];
      orderBy: { col: string; desc: boolean }[];
      limit?: Term;
      binds: number;
      text: string;
    };

function term(c: Cursor): Term {
  const t = c.peek();
  if (!t) return c.fail('expected a value');
  if (t.t === 'bind') {
    c.i++;
    return { k: 'bind', i: c.binds++ };
  }
  if (t.t === 'num') {
    c.i++;
    return { k: 'lit', v: t.v.includes('.') ? Number(t.v) : BigInt(t.v) };
  }
  if (t.t === 'p' && t.v === '-' && c.peek(1)?.t === 'num') {
    c.i++;
    const n = c.peek() as { v: string };
    c.i++;
    return { k: 'lit', v: n.v.includes('.') ? -Number(n.v) : -BigInt(n.v) };
  }
  if (t.t === 'str') {
    c.i++;
    return { k: 'lit', v: t.v };
  }
  if (t.t === 'id' && !t.quoted) {
    if (t.v === 'null') {
      c.i++;
      return { k: 'null' };
    }
    if (t.v === 'true' || t.v === 'false') {
      c.i++;
      return { k: 'lit', v: t.v === 'true' };
    }
    if (t.v === 'totimestamp') {
      c.i++;
      c.p('(');
      c.kw('now');
      c.p('(');
      c.p(')');
      c.p(')');
      return { k: 'now' };
    }
  }
  if (t.t === 'p' && (t.v === '[' || t.v === '{')) {
    c.i++;
    const close = t.v === '[' ? ']' : '}';
    const items: Term[] = [];
    const keys: Term[] = [];
    let kind: 'list' | 'set' | 'map' = t.v === '[' ? 'list' : 'set';
    if (!c.optP(close)) {
      do {
        const first = term(c);
        if (close === '}' && c.optP(':')) {
          kind = 'map';
          keys.push(first);
          items.push(term(c));
        } else items.push(first);
      } while (c.optP(','));
      c.p(close);
    }
    return kind === 'map' ? { k: 'coll', kind, items, keys } : { k: 'coll', kind, items };
  }
  return c.fail(`unsupported value at token ${c.i}`);
}

function cmp(c: Cursor): Cmp {
  const t = c.peek();
  if (t?.t === 'p' && ['=', '<', '<=', '>', '>='].includes(t.v)) {
    c.i++;
    return t.v as Cmp;
  }
  return c.fail(`expected a comparison at token ${c.i}`);
}

function whereClause(c: Cursor): Restriction[] {
  const out: Restriction[] = [];
  do {
    if (c.optP('(')) {
      const cols: string[] = [];
      do cols.push(c.ident());
      while (c.optP(','));
      c.p(')');
      const op = cmp(c);
      if (op === '=') c.fail('tuple equality');
      c.p('(');
      const terms: Term[] = [];
      do terms.push(term(c));
      while (c.optP(','));
      c.p(')');
      if (terms.length !== cols.length) c.fail('tuple arity');
      out.push({ k: 'tuple', cols, op, terms });
    } else if (c.isKw('token') && c.isP('(', 1)) {
      c.i += 2;
      const cols: string[] = [];
      do cols.push(c.ident());
      while (c.optP(','));
      c.p(')');
      const op = cmp(c);
      if (op === '=') c.fail('token equality');
      out.push({ k: 'token', cols, op, term: term(c) });
    } else {
      const col = c.ident();
      if (c.optKw('in')) {
        if (c.optP('(')) {
          const terms: Term[] = [];
          do terms.push(term(c));
          while (c.optP(','));
          c.p(')');
          out.push({ k: 'in', col, terms });
        } else out.push({ k: 'in', col, terms: term(c) });
      } else {
        const op = cmp(c);
        const t = term(c);
        out.push(op === '=' ? { k: 'eq', col, term: t } : { k: 'slice', col, op, term: t });
      }
    }
  } while (c.optKw('and'));
  return out;
}

function usingClause(c: Cursor): Using {
  const u: Using = {};
  do {
    if (c.optKw('timestamp')) u.timestamp = term(c);
    else if (c.optKw('ttl')) u.ttl = term(c);
    else c.fail('USING other than TIMESTAMP / TTL');
  } while (c.optKw('and'));
  return u;
}

function conditionsClause(c: Cursor): Condition[] {
  if (c.optKw('not')) {
    c.kw('exists');
    return [{ k: 'notExists' }];
  }
  if (c.optKw('exists')) return [{ k: 'exists' }];
  const out: Condition[] = [];
  do {
    const col = c.ident();
    c.p('=');
    out.push({ k: 'eq', col, term: term(c) });
  } while (c.optKw('and'));
  return out;
}

function parseInsert(c: Cursor): Statement {
  c.kw('into');
  const table = c.table();
  c.p('(');
  const cols: string[] = [];
  do cols.push(c.ident());
  while (c.optP(','));
  c.p(')');
  c.kw('values');
  c.p('(');
  const values: Term[] = [];
  do values.push(term(c));
  while (c.optP(','));
  c.p(')');
  if (values.length !== cols.length) c.fail('INSERT with a different number of columns and values');
  let conditions: Condition[] = [];
  let using: Using = {};
  for (;;) {
    if (c.optKw('if')) {
      conditions = conditionsClause(c);
      if (conditions[0]?.k !== 'notExists') c.fail('INSERT … IF other than NOT EXISTS');
    } else if (c.optKw('using')) using = usingClause(c);
    else break;
  }
  return { kind: 'insert', table, cols, values, using, conditions, binds: c.binds, text: c.text };
}

function parseUpdate(c: Cursor): Statement {
  const table = c.table();
  const using = c.optKw('using') ? usingClause(c) : {};
  c.kw('set');
  const assignments: Assignment[] = [];
  do {
    const col = c.ident();
    if (c.optP('[')) {
      const key = term(c);
      c.p(']');
      c.p('=');
      assignments.push({ k: 'elem', col, key, term: term(c) });
      continue;
    }
    c.p('=');
    const t = c.peek();
    if (t?.t === 'id' && t.v === col && (c.isP('+', 1) || c.isP('-', 1))) {
      c.i++;
      const op = c.isP('+') ? 'add' : 'sub';
      c.i++;
      assignments.push({ k: op, col, term: term(c) });
    } else {
      const value = term(c);
      if (c.optP('+')) {
        const again = c.ident();
        if (again !== col) c.fail('SET c = x + d with d not c');
        assignments.push({ k: 'prepend', col, term: value });
      } else assignments.push({ k: 'set', col, term: value });
    }
  } while (c.optP(','));
  c.kw('where');
  const where = whereClause(c);
  const conditions = c.optKw('if') ? conditionsClause(c) : [];
  return { kind: 'update', table, using, assignments, where, conditions, binds: c.binds, text: c.text };
}

function parseDelete(c: Cursor): Statement {
  const targets: { col: string; key?: Term }[] = [];
  if (!c.isKw('from')) {
    do {
      const col = c.ident();
      if (c.optP('[')) {
        const key = term(c);
        c.p(']');
        targets.push({ col, key });
      } else targets.push({ col });
    } while (c.optP(','));
  }
  c.kw('from');
  const table = c.table();
  const using = c.optKw('using') ? usingClause(c) : {};
  if (using.ttl) c.fail('DELETE … USING TTL');
  c.kw('where');
  const where = whereClause(c);
  const conditions = c.optKw('if') ? conditionsClause(c) : [];
  return { kind: 'delete', table, targets, using, where, conditions, binds: c.binds, text: c.text };
}

function parseSelect(c: Cursor): Statement {
  const distinct = c.optKw('distinct');
  const selectors: Selector[] = [];
  if (c.optP('*')) selectors.push({ k: 'star' });
  else {
    do {
      if ((c.isKw('writetime') || c.isKw('ttl')) && c.isP('(', 1)) {
        const k = c.ident() as 'writetime' | 'ttl';
        c.p('(');
        const col = c.ident();
        c.p(')');
        const alias = c.optKw('as') ? c.ident() : `${k}(${col})`;
        selectors.push({ k, col, alias });
      } else if (c.isKw('token') && c.isP('(', 1)) {
        c.i += 2;
        const cols: string[] = [];
        do cols.push(c.ident());
        while (c.optP(','));
        c.p(')');
        const alias = c.optKw('as') ? c.ident() : `system.token(${cols.join(', ')})`;
        selectors.push({ k: 'token', cols, alias });
      } else {
        const col = c.ident();
        if (c.isP('(')) c.fail(`function ${col}() in a selection`);
        const alias = c.optKw('as') ? c.ident() : col;
        selectors.push({ k: 'col', col, alias });
      }
    } while (c.optP(','));
  }
  c.kw('from');
  const table = c.table();
  const where = c.optKw('where') ? whereClause(c) : [];
  const orderBy: { col: string; desc: boolean }[] = [];
  if (c.optKw('order')) {
    c.kw('by');
    do {
      const col = c.ident();
      orderBy.push({ col, desc: c.direction() });
    } while (c.optP(','));
  }
  const limit = c.optKw('limit') ? term(c) : undefined;
  if (c.optKw('allow')) c.fail('ALLOW FILTERING');
  const s: Statement = {
    kind: 'select',
    table,
    distinct,
    selectors,
    where,
    orderBy,
    binds: c.binds,
    text: c.text,
  };
  if (limit) s.limit = limit;
  return s;
}

/** Parses one statement the store sends. */
export function parseStatement(text: string): Statement {
  const c = new Cursor(tokenize(text), text);
  let s: Statement;
  if (c.optKw('insert')) s = parseInsert(c);
  else if (c.optKw('update')) s = parseUpdate(c);
  else if (c.optKw('delete')) s = parseDelete(c);
  else if (c.optKw('select')) s = parseSelect(c);
  else return c.fail('statement kind');
  if (!c.done()) c.fail(`trailing tokens at token ${c.i}`);
  return s;
}
