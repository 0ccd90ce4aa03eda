import type { Requestor } from './requestor.js';

/** A group of API methods (`merx.products`); the generated classes extend it. */
export abstract class APIResource {
  protected readonly requestor: Requestor;

  constructor(requestor: Requestor) {
    this.requestor = requestor;
    // Not enumerable: console.log(merx.products) shows the methods' owner, not the client's internals.
    Object.defineProperty(this, 'requestor', { enumerable: false });
  }
}
