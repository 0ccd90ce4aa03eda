import {
  buildEvent,
  checkIfMatch,
  newId,
  NotFound,
  parsePageRequest,
  toListPage,
  type Db,
  type Emit,
  type MerchantId,
  type Outbox,
  type Queryable,
} from '@merx/kit';
import { effectiveChanges, presentResource, previousFields, resourceEtag, type Resource } from '../domain/resource.js';
import {
  deleteResourceForMerchant,
  findResourceForMerchant,
  insertResourceForMerchant,
  listResourcesForMerchant,
  updateResourceForMerchant,
  type Condition,
  type ResourceTable,
} from '../store/resource-table.js';

/** Who is asking: the tenant from the verified token, and its mode (live merchants need https endpoints). */
export interface Requester {
  merchantId: MerchantId;
  mode: 'sandbox' | 'live' | undefined;
}

/**
 * What makes sources, destinations, rules and connections different; everything else about
 * them (ids, versions, If-Match, events, lists) is the same and lives in `configResourceUseCases`.
 * Hooks run inside the write's transaction, so their checks and the write stand or fall together.
 */
export interface ResourceKind<F extends object> {
  /** `source`: the `object` of the wire shape and the noun of errors. */
  object: string;
  idPrefix: string;
  /** `sources`: the topic of its created/updated/deleted events. */
  topic: string;
  table: ResourceTable<F>;
  /** Fields stored but never shown (a destination's secret). */
  hidden?: readonly (keyof F)[];
  validateNew(body: unknown, requester: Requester): Promise<F> | F;
  validateChanges(body: unknown, current: Resource<F>, requester: Requester): Promise<Partial<F>> | Partial<F>;
  filters(query: Record<string, unknown>): Condition[];
  /** Checks against other rows (a connection's source exists); may lock what it reads. */
  beforeWrite?(tx: Queryable, merchantId: MerchantId, fields: F, changes: Partial<F> | undefined): Promise<void>;
  /** Refuses a delete that would orphan something (409). */
  beforeDelete?(tx: Queryable, merchantId: MerchantId, current: Resource<F>): Promise<void>;
  /** Messages to other services that follow a write (a destination's endpoint for the delivery engine). */
  afterWrite?(emit: Emit, resource: Resource<F>): void;
  afterDelete?(emit: Emit, resource: Resource<F>): void;
}

export interface ConfigUseCaseDeps {
  db: Db;
  outbox: Outbox;
  now?: () => Date;
}

export function configResourceUseCases<F extends object>(kind: ResourceKind<F>, { db, outbox, now = () => new Date() }: ConfigUseCaseDeps) {
  const present = (resource: Resource<F>) => presentResource(kind.object, resource, kind.hidden ?? []);

  async function findOrFail(tx: Queryable, merchantId: MerchantId, id: string, lock?: 'update'): Promise<Resource<F>> {
    const found = await findResourceForMerchant(tx, kind.table, merchantId, id, lock);
    if (!found) throw new NotFound(kind.object, id);
    return found;
  }

  /** A new resource of valid fields, with its events, inside the caller's transaction (create, sandbox seeding). */
  async function insert(tx: Queryable, emit: Emit, merchantId: MerchantId, fields: F): Promise<Resource<F>> {
    await kind.beforeWrite?.(tx, merchantId, fields, undefined);
    const created = now();
    const resource = await insertResourceForMerchant(tx, kind.table, merchantId, {
      id: newId(kind.idPrefix),
      merchantId,
      fields,
      version: 1,
      createdAt: created,
      updatedAt: created,
    });
    emit(buildEvent(`${kind.topic}.created`, merchantId, { object: present(resource) }));
    kind.afterWrite?.(emit, resource);
    return resource;
  }

  return {
    present,
    insert,

    async create(requester: Requester, body: unknown): Promise<Resource<F>> {
      const fields = await kind.validateNew(body, requester);
      return outbox.transaction((tx, emit) => insert(tx, emit, requester.merchantId, fields));
    },

    get: (merchantId: MerchantId, id: string) => findOrFail(db, merchantId, id),

    async list(merchantId: MerchantId, query: Record<string, unknown>) {
      const page = parsePageRequest(query);
      const rows = await listResourcesForMerchant(db, kind.table, merchantId, page, kind.filters(query));
      return toListPage(rows, page.limit, present);
    },

    async update(requester: Requester, id: string, body: unknown, ifMatch: string | undefined): Promise<Resource<F>> {
      return outbox.transaction(async (tx, emit) => {
        const current = await findOrFail(tx, requester.merchantId, id, 'update');
        checkIfMatch(ifMatch, resourceEtag(current));
        const changes = effectiveChanges(current.fields, await kind.validateChanges(body, current, requester));
        if (Object.keys(changes).length === 0) return current;
        await kind.beforeWrite?.(tx, requester.merchantId, { ...current.fields, ...changes }, changes);
        const updated = await updateResourceForMerchant(tx, kind.table, requester.merchantId, id, changes, now());
        emit(
          buildEvent(`${kind.topic}.updated`, requester.merchantId, {
            object: present(updated),
            previous: previousFields(current.fields, changes, kind.hidden ?? []),
          }),
        );
        kind.afterWrite?.(emit, updated);
        return updated;
      });
    },

    async delete(merchantId: MerchantId, id: string, ifMatch: string | undefined): Promise<void> {
      await outbox.transaction(async (tx, emit) => {
        const current = await findOrFail(tx, merchantId, id, 'update');
        checkIfMatch(ifMatch, resourceEtag(current));
        await kind.beforeDelete?.(tx, merchantId, current);
        await deleteResourceForMerchant(tx, kind.table, merchantId, id);
        emit(buildEvent(`${kind.topic}.deleted`, merchantId, { object: present(current) }));
        kind.afterDelete?.(emit, current);
      });
    },
  };
}

export type ConfigResourceUseCases<F extends object> = ReturnType<typeof configResourceUseCases<F>>;
