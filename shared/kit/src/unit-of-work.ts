import { AsyncLocalStorage } from 'node:async_hooks';
import type { Queryable, QueryResult } from './db.js';

/** What a database offers before units of work are layered on (see withUnitsOfWork). */
export interface BaseDb extends Queryable {
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
}

interface Unit {
  tx: Queryable;
  open: boolean;
  savepoints: number;
  /** Savepoint blocks take turns on the unit's one connection. */
  turn: Promise<unknown>;
  afterCommit: Array<() => void>;
}

export interface UnitsOfWork {
  /**
   * Runs `work` in one transaction that every statement of this database inside it joins:
   * `query` runs in it, `transaction` becomes a savepoint in it, and after-commit callbacks wait
   * for its commit. A request that must commit its answer with its effects (an idempotent POST)
   * runs in one; nothing it does is visible, or published, before the whole of it commits.
   */
  unitOfWork<T>(work: () => Promise<T>): Promise<T>;
  /** Runs `callback` after the current unit of work commits (dropped if it rolls back), or at once outside one. */
  afterCommit(callback: () => void): void;
}

/** Adds units of work to a database; each database object keeps its own units apart. */
export function withUnitsOfWork<D extends BaseDb>(base: D): D & UnitsOfWork {
  const units = new AsyncLocalStorage<Unit>();
  const openUnit = () => {
    const unit = units.getStore();
    return unit?.open ? unit : undefined;
  };
  const inTurn = <T>(unit: Unit, work: () => Promise<T>): Promise<T> => {
    const result = unit.turn.then(work, work);
    unit.turn = result.catch(() => undefined);
    return result;
  };
  return Object.assign(Object.create(base) as D, {
    query<Row>(sql: string, params?: unknown[]): Promise<QueryResult<Row>> {
      const unit = openUnit();
      return unit ? unit.tx.query<Row>(sql, params) : base.query<Row>(sql, params);
    },
    exec(sql: string): Promise<void> {
      const unit = openUnit();
      return unit ? unit.tx.exec(sql) : base.exec(sql);
    },
    transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
      const unit = openUnit();
      if (!unit) return base.transaction(work);
      return inTurn(unit, async () => {
        const savepoint = `merx_unit_${(unit.savepoints += 1)}`;
        await unit.tx.query(`SAVEPOINT ${savepoint}`);
        try {
          const value = await work(unit.tx);
          await unit.tx.query(`RELEASE SAVEPOINT ${savepoint}`);
          return value;
        } catch (error) {
          await unit.tx.query(`ROLLBACK TO SAVEPOINT ${savepoint}`);
          throw error;
        }
      });
    },
    async unitOfWork<T>(work: () => Promise<T>): Promise<T> {
      if (openUnit()) return work();
      const unit: Unit = { tx: undefined as unknown as Queryable, open: false, savepoints: 0, turn: Promise.resolve(), afterCommit: [] };
      try {
        const value = await base.transaction((tx) => {
          unit.tx = tx;
          unit.open = true;
          return units.run(unit, work);
        });
        unit.open = false;
        for (const callback of unit.afterCommit.splice(0)) callback();
        return value;
      } finally {
        unit.open = false;
      }
    },
    afterCommit(callback: () => void): void {
      const unit = openUnit();
      if (unit) unit.afterCommit.push(callback);
      else callback();
    },
  });
}
