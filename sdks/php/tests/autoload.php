<?php

declare(strict_types=1);

// The suite's class loading: Composer's generated autoloader for the SDK (merx/merx-php from this
// repository), the PSR interfaces and the suite's own classes (see composer.json: Packagist is not
// reachable, so the PSR packages are Debian's copies under /usr/share/php); then Debian's own
// autoloaders for the third-party implementations the suite runs the SDK over: Symfony's
// HttpClient (Psr18Client), Nyholm's and Guzzle's PSR-7/PSR-17.
$composer = __DIR__ . '/vendor/autoload.php';
if (!is_file($composer)) {
    fwrite(\STDERR, "Run `composer install` in " . __DIR__ . " first (php run.php does it)\n");
    exit(1);
}
require $composer;
require_once '/usr/share/php/Nyholm/Psr7/autoload.php';
require_once '/usr/share/php/GuzzleHttp/Psr7/autoload.php';
require_once '/usr/share/php/Symfony/Component/HttpClient/autoload.php';
