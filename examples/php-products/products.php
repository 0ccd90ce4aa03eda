#!/usr/bin/env php
<?php

declare(strict_types=1);

// Creates a product and lists the newest ones, across pages: the Merx PHP SDK's quick start.
//
//   MERX_API_KEY=mx_test_… MERX_BASE_URL=http://localhost:8080 php products.php [SKU]

require getenv('MERX_EXAMPLE_AUTOLOAD') ?: __DIR__ . '/vendor/autoload.php';

use Merx\Exception\MerxError;
use Merx\Exception\UnprocessableEntityError;
use Merx\Merx;

$merx = new Merx(); // apiKey from MERX_API_KEY, baseUrl from MERX_BASE_URL
$sku = $argv[1] ?? 'TSHIRT-' . strtoupper(bin2hex(random_bytes(3)));

try {
    $product = $merx->products->create([
        'sku' => $sku,
        'title' => 'T-shirt',
        'price' => '19.99',
        'currency' => 'USD',
    ]);
    printf("created %s %s %s %s (ETag %s, request %s)\n", $product->id, $product->sku, $product->price, $product->currency, $product->meta()?->etag(), $product->meta()?->requestId());

    echo "newest products:\n";
    $shown = 0;
    foreach ($merx->products->list(['limit' => 10]) as $listed) { // fetches further pages as the loop needs them
        printf("  %s  %-20s %10s %s  %s\n", $listed->id, $listed->sku, $listed->price, $listed->currency, $listed->status);
        if (++$shown === 25) {
            break;
        }
    }
} catch (UnprocessableEntityError $e) {
    foreach ($e->errors() as $error) {
        fprintf(\STDERR, "%s: %s\n", $error['field'], $error['message']);
    }
    exit(1);
} catch (MerxError $e) {
    fprintf(\STDERR, "%s\n", $e->getMessage());
    exit(1);
}
