<?php

declare(strict_types=1);

namespace Merx\Tests\Integration;

use Merx\Core\Page;
use Merx\Exception\ConflictError;
use Merx\Models;
use Merx\Tests\Support\IntegrationTestCase;
use Merx\Tests\Support\Processes;

/** The other resources against the real server: every answer read into its generated model. */
final class ResourcesTest extends IntegrationTestCase
{
    public function testMerchantProfileAndApiKeys(): void
    {
        ['merchant_id' => $merchantId, 'api_key' => $key] = $this->newMerchant();
        $merx = $this->merx($key);

        $merchant = Processes::eventually(static function () use ($merx): ?Models\Merchant {
            try {
                return $merx->merchant->retrieve(['max_retries' => 0]);
            } catch (\Merx\Exception\InternalServerError) {
                return null; // 503 until the merchants service has heard of the new merchant
            }
        }, 10, 'the merchant profile');
        self::assertSame($merchantId, $merchant->id);
        $updated = $merx->merchant->update(['name' => 'Renamed', 'default_currency' => 'EUR'], ['if_match' => (string) $merchant->meta()?->etag()]);
        self::assertSame('Renamed', $updated->name);
        self::assertSame('EUR', $updated->defaultCurrency);

        $created = $merx->apiKeys->create(['name' => 'Reporting', 'scopes' => ['products:read', 'audit:read']]);
        self::assertInstanceOf(Models\ApiKeyWithSecret::class, $created);
        self::assertSame(['products:read', 'audit:read'], $created->scopes);
        $keys = $merx->apiKeys->list();
        self::assertContainsOnlyInstancesOf(Models\ApiKey::class, $keys->data);
        self::assertContains($created->id, array_map(static fn (Models\ApiKey $k): string => $k->id, $keys->data));
        self::assertNull($merx->apiKeys->retrieve($created->id)->revokedAt);
        self::assertSame(204, $merx->apiKeys->revoke($created->id)->meta()->statusCode);
        self::assertSame([], $merx->apps->list()->data);
    }

    public function testSourcesRecordsDestinationsRulesAndConnections(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key']);
        $source = $merx->sources->create(['name' => 'Storefront', 'kind' => 'storefront', 'settings' => ['region' => 'eu']]);
        self::assertInstanceOf(Models\Source::class, $source);
        self::assertSame(['region' => 'eu'], $source->settings);
        $destination = $merx->destinations->create(['name' => 'ERP', 'kind' => 'http', 'url' => 'http://127.0.0.1:9/erp', 'status' => 'paused']);
        self::assertInstanceOf(Models\DestinationWithSecret::class, $destination);
        self::assertStringStartsWith('whsec_', $destination->secret);
        $rule = $merx->rules->create(['name' => 'Large EUR orders', 'action' => 'forward', 'event_types' => ['orders.created'], 'condition' => 'data.total >= 100.0 && data.currency == "EUR"']);
        self::assertSame('forward', $rule->action);
        $connection = $merx->connections->create(['source_id' => $source->id, 'destination_id' => $destination->id, 'rule_ids' => [$rule->id], 'event_types' => ['orders.created']]);
        self::assertSame([$rule->id], $connection->ruleIds);

        $batch = $merx->sources->records->create($source->id, ['records' => [
            ['type' => 'order', 'external_id' => 'o-1', 'occurred_at' => '2026-11-22T10:04:05.123Z', 'data' => ['total' => 250.0, 'currency' => 'EUR']],
            ['type' => 'order', 'external_id' => 'o-2', 'occurred_at' => '2026-11-22T10:05:05.123Z', 'data' => ['total' => 5.0, 'currency' => 'EUR']],
            ['type' => 'alert', 'external_id' => 'a-1', 'occurred_at' => '2026-11-22T10:06:05.123Z', 'data' => ['severity' => 'critical']],
        ]]);
        self::assertInstanceOf(Models\RecordBatchResult::class, $batch);
        self::assertSame([2, 0, 1], [$batch->accepted, $batch->duplicates, $batch->rejected]);
        self::assertSame('rejected', $batch->results[2]->status, 'an alert without data.message');
        self::assertNotSame([], $batch->results[2]->errors);

        // Routing runs after ingestion: wait for the large order's route through the connection.
        $records = Processes::eventually(static function () use ($merx, $source): ?Page {
            $page = $merx->sources->records->list($source->id, ['type' => 'order']);

            return ($page->data[1]->routes ?? []) !== [] ? $page : null;
        }, 15, 'the large order routed');
        self::assertSame(['o-2', 'o-1'], array_map(static fn (Models\Record $r): string => $r->externalId, $records->data));
        self::assertSame($connection->id, $records->data[1]->routes[0]->connectionId);

        $paused = $merx->sources->update($source->id, ['status' => 'paused'], ['if_match' => (string) $source->meta()?->etag()]);
        self::assertSame('paused', $paused->status);
        self::assertSame($source->id, $merx->sources->retrieve($source->id)->id);
        try {
            $merx->sources->delete($source->id);
            self::fail('a source a connection uses cannot go');
        } catch (ConflictError) {
        }
        $merx->connections->delete($connection->id);
        foreach ([$merx->sources, $merx->destinations, $merx->rules] as $resource) {
            self::assertCount(1, iterator_to_array($resource->list(), false));
        }
        $merx->sources->delete($source->id);
        self::assertSame([], $merx->sources->list()->data);
    }

    public function testSubscriptionsEventsDeliveriesAuditAndSandbox(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key']);
        $subscription = $merx->webhooks->subscriptions->create(['url' => 'http://127.0.0.1:9/hooks', 'topics' => ['products'], 'description' => 'nobody listens']);
        $updated = $merx->webhooks->subscriptions->update($subscription->id, ['description' => 'still nobody'], ['if_match' => (string) $subscription->meta()?->etag()]);
        self::assertSame('still nobody', $updated->description);
        $product = $merx->products->create(['sku' => self::sku(), 'title' => 'Evented', 'price' => '9.00', 'currency' => 'USD']);

        $event = Processes::eventually(static fn (): ?Models\Event => $merx->events->list(['topic' => 'products.created'])->data[0] ?? null, 15, 'products.created in the events API');
        self::assertSame($product->id, $event->data->object['id']);
        self::assertSame($event->id, $merx->events->retrieve($event->id)->id);
        $delivery = Processes::eventually(static fn (): ?Models\WebhookDelivery => $merx->webhooks->deliveries->list(['event_id' => $event->id])->data[0] ?? null, 15, 'the delivery of the event');
        self::assertSame($subscription->id, $delivery->subscriptionId);
        self::assertInstanceOf(Models\WebhookDeliveryWithAttempts::class, $merx->webhooks->deliveries->retrieve($delivery->id));
        self::assertInstanceOf(Models\WebhookSubscriptionStats::class, $merx->webhooks->subscriptions->stats->retrieve($subscription->id));
        self::assertInstanceOf(Page::class, $merx->webhooks->deadLetters->list());
        self::assertSame(0, $merx->webhooks->deadLetters->replayAll(['subscription_id' => $subscription->id])->replayed);
        self::assertCount(1, iterator_to_array($merx->webhooks->subscriptions->list(), false));

        $entry = Processes::eventually(static fn (): ?Models\AuditEntry => $merx->audit->list(['resource_id' => $product->id])->data[0] ?? null, 15, 'the audit entry of the product');
        self::assertSame('products.created', $entry->action);
        self::assertSame($entry->id, $merx->audit->retrieve($entry->id)->id);
        self::assertTrue($merx->audit->verify()->valid);

        self::assertSame(204, $merx->webhooks->subscriptions->delete($subscription->id)->meta()->statusCode);
        $reset = $merx->sandbox->reset(['seed' => true]);
        self::assertSame(202, $reset->meta()?->statusCode);
        $done = Processes::eventually(static fn (): ?Models\SandboxReset => ($r = $merx->sandbox->resets->retrieve($reset->id))->status === 'completed' ? $r : null, 30, 'the sandbox reset completing');
        self::assertSame($reset->id, $done->id);
        $skus = array_map(static fn (Models\Product $p): string => $p->sku, iterator_to_array($merx->products->list(), false));
        self::assertCount(3, $skus, 'the reset wiped the product and seeded three');
        self::assertNotContains($product->sku, $skus);
    }
}
