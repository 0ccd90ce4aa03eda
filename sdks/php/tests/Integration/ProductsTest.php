<?php

declare(strict_types=1);

namespace Merx\Tests\Integration;

use Merx\Core\NoContent;
use Merx\Core\Page;
use Merx\Exception\NotFoundError;
use Merx\Exception\PreconditionFailedError;
use Merx\Models\Product;
use Merx\Tests\Support\IntegrationTestCase;

final class ProductsTest extends IntegrationTestCase
{
    public function testCreateReturnsATypedProductWithItsEtagAndRequestId(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key']);
        $sku = self::sku();

        $product = $merx->products->create(['sku' => $sku, 'title' => 'T-shirt', 'price' => '19.9', 'currency' => 'USD', 'attributes' => ['color' => 'black']]);

        self::assertInstanceOf(Product::class, $product);
        self::assertMatchesRegularExpression('/^prod_[0-9a-z]{26}$/', $product->id);
        self::assertSame($sku, $product->sku);
        self::assertSame('19.90', $product->price, 'money stays a decimal string, normalised by the server');
        self::assertSame('active', $product->status);
        self::assertNull($product->inventoryQuantity);
        self::assertSame(['color' => 'black'], $product->attributes);
        self::assertSame(1, $product->version);
        self::assertSame('"v1"', $product->meta()?->etag());
        self::assertMatchesRegularExpression('/^req_[0-9a-z]{26}$/', (string) $product->meta()?->requestId());
        self::assertSame(201, $product->meta()?->statusCode);
        self::assertSame('19.90', $product['price'], 'array access reads the wire fields');
        self::assertSame($product->id, $product->toArray()['id']);
        self::assertSame($product->toArray(), json_decode(json_encode($product, \JSON_THROW_ON_ERROR), true));

        $again = $merx->products->retrieve($product->id);
        self::assertEquals($product->toArray(), $again->toArray());
        self::assertSame(200, $again->meta()?->statusCode);
    }

    public function testListIteratesEveryPageLazilyNewestFirst(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key']);
        $created = [];
        for ($i = 0; $i < 5; ++$i) {
            $created[] = $merx->products->create(['sku' => self::sku(), 'title' => "Product {$i}", 'price' => '1.00', 'currency' => 'EUR'])->id;
        }

        $page = $merx->products->list(['limit' => 2]);

        self::assertInstanceOf(Page::class, $page);
        self::assertCount(2, $page->data);
        self::assertTrue($page->hasMore);
        self::assertNotNull($page->nextCursor);
        self::assertContainsOnlyInstancesOf(Product::class, $page->data);
        $seen = [];
        foreach ($page as $product) {
            $seen[] = $product->id;
        }
        self::assertSame(array_reverse($created), $seen, 'foreach walks all three pages, newest first');

        $second = $page->nextPage();
        self::assertNotNull($second);
        self::assertSame(\array_slice(array_reverse($created), 2, 2), array_map(static fn (Product $p): string => $p->id, $second->data));
        $third = $second->nextPage();
        self::assertNotNull($third);
        self::assertFalse($third->hasMore);
        self::assertNull($third->nextPage());
    }

    public function testListFiltersApplyToEveryPage(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key']);
        foreach (['draft', 'active', 'draft', 'draft'] as $status) {
            $merx->products->create(['sku' => self::sku(), 'title' => 'x', 'price' => '2.00', 'currency' => 'USD', 'status' => $status]);
        }

        $drafts = iterator_to_array($merx->products->list(['limit' => 1, 'status' => 'draft']), false);

        self::assertCount(3, $drafts);
        foreach ($drafts as $draft) {
            self::assertSame('draft', $draft->status);
        }
    }

    public function testUpdateWithIfMatchAppliesOnlyToTheVersionRead(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key']);
        $product = $merx->products->create(['sku' => self::sku(), 'title' => 'Old', 'price' => '5.00', 'currency' => 'USD']);
        $etag = (string) $product->meta()?->etag();

        $updated = $merx->products->update($product->id, ['title' => 'New'], ['if_match' => $etag]);

        self::assertSame('New', $updated->title);
        self::assertSame(2, $updated->version);
        self::assertSame('"v2"', $updated->meta()?->etag());
        try {
            $merx->products->update($product->id, ['title' => 'Lost update'], ['if_match' => $etag]);
            self::fail('a stale If-Match must be refused');
        } catch (PreconditionFailedError $e) {
            self::assertSame(412, $e->status);
            self::assertSame('precondition_failed', $e->errorCode);
        }
        self::assertSame('New', $merx->products->retrieve($product->id)->title);
    }

    public function testDeleteAnswersNoContentAndTheProductIsGone(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key']);
        $product = $merx->products->create(['sku' => self::sku(), 'title' => 'Gone soon', 'price' => '5.00', 'currency' => 'USD']);

        $deleted = $merx->products->delete($product->id);

        self::assertInstanceOf(NoContent::class, $deleted);
        self::assertSame(204, $deleted->meta()->statusCode);
        self::assertNotNull($deleted->meta()->requestId());
        $this->expectException(NotFoundError::class);
        $merx->products->retrieve($product->id);
    }
}
